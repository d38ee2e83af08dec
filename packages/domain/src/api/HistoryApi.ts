/**
 * Downloading the message history as one file.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import * as E from "../ApiError.js"
import { Authentication } from "../Auth.js"
import { HistoryExport } from "../Message.js"
import { ReadErrors } from "./Errors.js"
import { withCsvDownload } from "./OpenApiDoc.js"
import { FromParam, TimeParam } from "./Params.js"

/** @since 1.0.0 */
export class HistoryApi extends HttpApiGroup.make("history")
  .add(
    HttpApiEndpoint.get("export", "/export")
      .setUrlParams(Schema.Struct({
        from: Schema.optional(FromParam),
        since: Schema.optional(TimeParam("Not earlier than")),
        until: Schema.optional(TimeParam("Earlier than")),
        format: Schema.optional(Schema.Literal("csv", "json").annotations({ description: "Default csv" }))
      }))
      .addSuccess(HistoryExport)
      .addError(ReadErrors)
      .addError(E.wire(E.RateLimited))
      .annotate(OpenApi.Summary, "Download the history as CSV or JSON, oldest first, at most 100 000 messages")
      .annotateContext(withCsvDownload)
  )
  .middleware(Authentication)
{}
