import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { NotFound } from "@wagate/domain/ApiError"
import { WagateApi } from "@wagate/domain/Api"
import { CurrentKey } from "@wagate/domain/Auth"
import type { MessagePage } from "@wagate/domain/Message"
import { Messages } from "@wagate/store/Messages"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { NumberScope } from "../NumberScope.js"
import { parseChat, parseRange } from "../Params.js"
import { retainedSince } from "./Retention.js"
import { makeSend } from "./SendHttp.js"

export const MessagesHttp = HttpApiBuilder.group(WagateApi, "messages", (handlers) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    const scope = yield* NumberScope
    const send = yield* makeSend
    return handlers
      .handleRaw("send", send)
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          const number = yield* scope.reading(principal, urlParams.from)
          const { since, until } = yield* parseRange(urlParams)
          const chatId = urlParams.chat === undefined ? undefined : yield* parseChat(urlParams.chat)
          const page = yield* messages.page({
            accountId: principal.accountId,
            numberId: number?.id ?? null,
            chatId,
            direction: urlParams.direction,
            since,
            until,
            before: urlParams.before,
            limit: urlParams.limit ?? 50
          }, yield* retainedSince)
          // The page is already in its wire form (the store builds it as MessagePage, which has no
          // transformations), so it is written as is: encoding up to 500 messages through the
          // schema again was the largest single cost of this endpoint.
          return HttpServerResponse.unsafeJson(page satisfies MessagePage)
        }))
      .handle("get", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          const found = yield* messages.find(principal.accountId, principal.numberId, path.id, yield* retainedSince)
          return yield* Option.match(found, {
            onNone: () => Effect.fail(new NotFound({ error: "Message not found" })),
            onSome: Effect.succeed
          })
        }))
  }))
