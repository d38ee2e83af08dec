/**
 * A number's trust index, limits and usage.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import * as E from "../ApiError.js"
import { Authentication } from "../Auth.js"
import { Limits } from "../Limits.js"
import { NumberChoiceErrors } from "./Errors.js"
import { FromParam } from "./Params.js"

/** @since 1.0.0 */
export class LimitsApi extends HttpApiGroup.make("limits")
  .add(
    HttpApiEndpoint.get("get", "/limits")
      .setUrlParams(Schema.Struct({ from: Schema.optional(FromParam) }))
      .addSuccess(Limits)
      .addError(NumberChoiceErrors)
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Trust index, today's limits and usage of a number")
  )
  .middleware(Authentication)
{}
