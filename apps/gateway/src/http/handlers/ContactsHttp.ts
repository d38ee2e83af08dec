import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { WagateApi } from "@wagate/domain/Api"
import { InvalidParam } from "@wagate/domain/ApiError"
import { CurrentKey, type Principal } from "@wagate/domain/Auth"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { quotaHeaders } from "../ApiErrors.js"
import { Settings } from "../../Config.js"
import { bounded } from "../EntityCalls.js"
import { NumberScope } from "../NumberScope.js"
import { normalizePhone, phoneRefusal } from "../Params.js"

/** Whether a phone is on WhatsApp, through one of the key's numbers (POST /contacts/check, MCP check_number). */
export const makeCheck = Effect.gen(function*() {
  const scope = yield* NumberScope
  const numbers = yield* NumberEntity.client
  const { entityTimeoutMs } = yield* Settings
  return Effect.fn("Contacts.check")(function*(principal: Principal, payload: {
    readonly phone: string
    readonly from?: string | number | undefined
  }) {
    const phone = normalizePhone(payload.phone)
    if (phone === null) {
      return yield* new InvalidParam({ error: phoneRefusal(payload.phone, "phone must be digits in international format") })
    }
    const number = yield* scope.acting(principal, payload.from)
    const checked = yield* numbers(String(number.id)).Check({ phone }).pipe(bounded(Duration.millis(entityTimeoutMs)))
    return { phone, exists: checked.exists, chat_id: checked.chatId, quota: checked.quota }
  })
})

export const ContactsHttp = HttpApiBuilder.group(WagateApi, "contacts", (handlers) =>
  Effect.gen(function*() {
    const check = yield* makeCheck
    return handlers.handle("check", ({ payload }) =>
      Effect.gen(function*() {
        const { quota, ...checked } = yield* check(yield* CurrentKey, payload)
        return HttpServerResponse.unsafeJson(checked, { headers: quotaHeaders(quota) })
      }))
  }))
