import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { CurrentKey } from "@wagate/domain/Auth"
import { Messages } from "@wagate/store/Messages"
import * as Effect from "effect/Effect"
import { NumberScope } from "../NumberScope.js"
import { retainedSince } from "./Retention.js"

export const ChatsHttp = HttpApiBuilder.group(WagateApi, "chats", (handlers) =>
  Effect.gen(function*() {
    const messages = yield* Messages
    const scope = yield* NumberScope
    return handlers.handle("list", ({ urlParams }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentKey
        const number = yield* scope.reading(principal, urlParams.from)
        const chats = yield* messages.chats(principal.accountId, number?.id ?? null, urlParams.limit ?? 100, yield* retainedSince)
        return { chats }
      }))
  }))
