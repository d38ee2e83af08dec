/**
 * What the gateway serves over HTTP: the public contract plus the operator API, which the
 * OpenAPI document leaves out.
 */
import * as OpenApi from "@effect/platform/OpenApi"
import { WagateApi } from "@wagate/domain/Api"
import { OpsGroup, OpsStorageGroup, OpsWebhooksGroup } from "@wagate/domain/OpsApi"
import { SimGroup } from "@wagate/whatsapp/sim/SimApi"
import { FilesGroup } from "./FilesGroup.js"

export class GatewayApi extends WagateApi.add(OpsGroup.annotate(OpenApi.Exclude, true))
  .add(OpsWebhooksGroup.annotate(OpenApi.Exclude, true))
  .add(OpsStorageGroup.annotate(OpenApi.Exclude, true))
  .add(FilesGroup.annotate(OpenApi.Exclude, true))
{}

/** The same with the simulator's control surface (/sim/v1), served when the network is simulated. */
export class GatewaySimApi extends GatewayApi.add(SimGroup) {}
