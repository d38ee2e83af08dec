/**
 * `GET /files/<token>`: the signed links the gateway serves itself for the stores that have no
 * URL of their own (filesystem, memory). The token is the authorization; no key is asked.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

const token = HttpApiSchema.param("token", Schema.String)

export class FilesGroup extends HttpApiGroup.make("files")
  .add(HttpApiEndpoint.get("serve")`/files/${token}`)
{}
