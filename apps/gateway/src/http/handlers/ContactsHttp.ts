import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { WagateApi } from "@wagate/domain/Api"
import { InvalidParam } from "@wagate/domain/ApiError"
import { CurrentKey } from "@wagate/domain/Auth"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { quotaHeaders } from "../ApiErrors.js"
import { Settings } from "../../Config.js"
import { bounded } from "../EntityCalls.js"
import { NumberScope } from "../NumberScope.js"
import { normalizePhone } from "../Params.js"

export const ContactsHttp = HttpApiBuilder.group(WagateApi, "contacts", (handlers) =>
  Effect.gen(function*() {
    const scope = yield* NumberScope
    const numbers = yield* NumberEntity.client
    const { entityTimeoutMs } = yield* Settings
    return handlers.handle("check", ({ payload }) =>
      Effect.gen(function*() {
        const phone = normalizePhone(payload.phone)
        if (phone === null) return yield* new InvalidParam({ error: "phone must be digits in international format" })
        const number = yield* scope.acting(yield* CurrentKey, payload.from)
        const checked = yield* numbers(String(number.id)).Check({ phone }).pipe(bounded(Duration.millis(entityTimeoutMs)))
        return HttpServerResponse.unsafeJson(
          { phone, exists: checked.exists, chat_id: checked.chatId },
          { headers: quotaHeaders(checked.quota) }
        )
      }))
  }))
