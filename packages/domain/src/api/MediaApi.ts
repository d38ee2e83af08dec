/**
 * The files of messages: signed links and deletion.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import * as E from "../ApiError.js"
import { Authentication } from "../Auth.js"
import { DeleteResult, MediaDeleteRequest } from "../Storage.js"
import { BodyErrors, ByIdErrors, FromErrors } from "./Errors.js"
import { FlagParam, id } from "./Params.js"

/** @since 1.0.0 */
export class MediaApi extends HttpApiGroup.make("media")
  .add(
    HttpApiEndpoint.get("get")`/media/${id}`
      .setUrlParams(Schema.Struct({
        download: Schema.optional(
          FlagParam.annotations({
            description: "1 or true: download as a file with the original name; 0 or false (default): images, video, audio and PDF open in the browser"
          })
        )
      }))
      .addSuccess(HttpApiSchema.Empty(302).annotations({ description: "Location: signed link valid 15 minutes" }))
      .addError(ByIdErrors)
      .addError(E.wire(E.StorageUnavailable))
      .annotate(OpenApi.Summary, "Redirect to a signed link of a message's file")
  )
  .add(
    HttpApiEndpoint.del("delete")`/media/${id}`
      .addSuccess(DeleteResult)
      .addError(ByIdErrors)
      .annotate(OpenApi.Summary, "Delete one file; the message text remains")
  )
  .add(
    HttpApiEndpoint.post("bulkDelete", "/media/delete")
      .setPayload(MediaDeleteRequest)
      .addSuccess(DeleteResult)
      .addError(BodyErrors)
      .addError(FromErrors)
      .annotate(OpenApi.Summary, "Delete files in bulk; the message texts remain")
  )
  .middleware(Authentication)
{}
