/**
 * Public endpoints outside the versioned API: the service status needs no key.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { ServiceStatus } from "../ServiceStatus.js"

/** @since 1.0.0 */
export class PublicApi extends HttpApiGroup.make("public")
  .add(
    HttpApiEndpoint.get("status", "/api/status")
      .addSuccess(ServiceStatus)
      .annotate(OpenApi.Summary, "Public service status: overall state, version and dependency health")
  )
{}
