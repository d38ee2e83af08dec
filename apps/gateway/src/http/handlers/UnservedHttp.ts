/**
 * Endpoints of the contract that this version does not serve yet. They authenticate like every
 * other endpoint, then answer 501 `not_implemented`: never a fake success.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { NotImplemented } from "@wagate/domain/ApiError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const unserved = () => Effect.fail(new NotImplemented())

export const UnservedHttp = Layer.mergeAll(
  HttpApiBuilder.group(WagateApi, "history", (h) => h.handle("export", unserved)),
  HttpApiBuilder.group(WagateApi, "exports", (h) =>
    h.handle("list", unserved).handle("create", unserved).handle("get", unserved))
)
