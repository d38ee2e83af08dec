/**
 * An account's webhook set by the operator (`wagate webhook set|show|rotate`), with the same
 * rules as the account's own endpoint; `reseal-secrets` after a change of WEBHOOK_SECRET_KEY.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { NotFound } from "@wagate/domain/ApiError"
import { AccountId } from "@wagate/domain/Ids"
import { Accounts } from "@wagate/store/Accounts"
import { WebhookStore } from "@wagate/webhooks/WebhookStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { GatewayApi } from "../GatewayApi.js"
import { makeWebhookCalls } from "./WebhooksHttp.js"

export const OpsWebhooksHttp = HttpApiBuilder.group(GatewayApi, "opsWebhooks", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const calls = yield* makeWebhookCalls
    const store = yield* WebhookStore
    const account = (id: number) =>
      Effect.flatMap(accounts.find(AccountId.make(id)), (found) =>
        Option.isNone(found) ? Effect.fail(new NotFound({ error: `No account ${id}` })) : Effect.succeed(id))
    return handlers
      .handle("show", ({ path }) => Effect.flatMap(account(path.id), (id) => calls.show(id)))
      .handle("set", ({ path, payload }) => Effect.flatMap(account(path.id), (id) => calls.set(id, payload)))
      .handle("rotateSecret", ({ path }) => Effect.flatMap(account(path.id), calls.rotate))
      .handle("resealSecrets", () => store.reseal())
  }))
