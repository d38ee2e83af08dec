/**
 * The account's numbers and their connection.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as E from "../ApiError.js"
import { Authentication } from "../Auth.js"
import { Connection } from "../Connection.js"
import { NumberList } from "../LinkedNumber.js"
import { id } from "./Params.js"

/** @since 1.0.0 */
export class NumbersApi extends HttpApiGroup.make("numbers")
  .add(
    HttpApiEndpoint.get("list", "/numbers")
      .addSuccess(NumberList)
      .annotate(OpenApi.Summary, "Numbers of the account and how many it may hold")
  )
  .add(
    HttpApiEndpoint.get("connection")`/numbers/${id}/connection`
      .addSuccess(Connection)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
      .annotate(OpenApi.Summary, "Connection status of a number: {status, phone, paid_until}")
  )
  .middleware(Authentication)
{}
