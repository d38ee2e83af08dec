import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { CurrentKey } from "@wagate/domain/Auth"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Settings } from "../../Config.js"
import { bounded } from "../EntityCalls.js"
import { NumberScope } from "../NumberScope.js"

export const LimitsHttp = HttpApiBuilder.group(WagateApi, "limits", (handlers) =>
  Effect.gen(function*() {
    const scope = yield* NumberScope
    const numbers = yield* NumberEntity.client
    const { entityTimeoutMs } = yield* Settings
    return handlers.handle("get", ({ urlParams }) =>
      Effect.gen(function*() {
        const number = yield* scope.acting(yield* CurrentKey, urlParams.from)
        return yield* numbers(String(number.id)).Limits().pipe(bounded(Duration.millis(entityTimeoutMs)))
      }))
  }))
