/**
 * Archive exports: ZIP files of an account's files and conversations, built in the background.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as E from "../ApiError.js"
import { ArchiveExport, CreateExportBody, ExportList } from "../ArchiveExport.js"
import { Authentication } from "../Auth.js"
import { BodyErrors, ByIdErrors, FromErrors } from "./Errors.js"
import { id } from "./Params.js"

/** @since 1.0.0 */
export class ExportsApi extends HttpApiGroup.make("exports")
  .add(
    HttpApiEndpoint.get("list", "/exports")
      .addSuccess(ExportList)
      .annotate(OpenApi.Summary, "The last 50 archive exports, newest first")
  )
  .add(
    HttpApiEndpoint.post("create", "/exports")
      .setPayload(CreateExportBody)
      .addSuccess(ArchiveExport, { status: 202 })
      .addError(BodyErrors)
      .addError(FromErrors)
      .addError(E.wire(E.ExportBusy))
      .addError(E.wire(E.ExportLimit))
      .addError(E.wire(E.StorageUnavailable))
      .annotate(OpenApi.Summary, "Start a ZIP archive of files and conversation")
      // The body is optional: none at all is `{}`.
      .annotate(OpenApi.Transform, (op) => ({ ...op, requestBody: { ...op.requestBody, required: false } }))
  )
  .add(
    HttpApiEndpoint.get("get")`/exports/${id}`
      .addSuccess(ArchiveExport)
      .addError(ByIdErrors)
      .addError(E.wire(E.StorageUnavailable))
      .annotate(OpenApi.Summary, "One archive export with progress and a fresh 15-minute link")
  )
  .middleware(Authentication)
{}
