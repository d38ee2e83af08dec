/**
 * Endpoints of the contract that this version does not serve yet. They authenticate like every
 * other endpoint, then answer 501 `not_implemented`: never a fake success.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { NotImplemented } from "@wagate/domain/ApiError"
import { CurrentKey } from "@wagate/domain/Auth"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { requireAccountKey } from "../NumberScope.js"

const unserved = () => Effect.fail(new NotImplemented())

export const UnservedHttp = Layer.mergeAll(
  HttpApiBuilder.group(WagateApi, "media", (h) =>
    h.handle("get", unserved).handle("delete", unserved).handle("bulkDelete", unserved)),
  HttpApiBuilder.group(WagateApi, "storage", (h) =>
    h.handle("get", () => Effect.zipRight(Effect.flatMap(CurrentKey, requireAccountKey), unserved())))
)
