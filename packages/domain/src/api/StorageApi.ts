/**
 * Storage accounting of the account.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Authentication } from "../Auth.js"
import { Storage } from "../Storage.js"
import { AccountKeyOnly } from "./Errors.js"

/** @since 1.0.0 */
export class StorageApi extends HttpApiGroup.make("storage")
  .add(
    HttpApiEndpoint.get("get", "/storage")
      .addSuccess(Storage)
          .annotate(OpenApi.Summary, "Storage accounting of the account (account key only)")
  )
  .addError(AccountKeyOnly)
  .middleware(Authentication)
{}
