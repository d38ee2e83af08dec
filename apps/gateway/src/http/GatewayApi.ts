/**
 * What the gateway serves over HTTP: the public contract plus the operator API and the
 * cabinet's API, which the OpenAPI document leaves out.
 */
import * as OpenApi from "@effect/platform/OpenApi"
import { CabinetAuthGroup, CabinetGroup } from "@wagate/cabinet/CabinetApi"
import { WagateApi } from "@wagate/domain/Api"
import { PaymentsGroup } from "@wagate/domain/OpsBillingApi"
import { OpsBillingGroup, OpsGroup, OpsStorageGroup, OpsWebhooksGroup } from "@wagate/domain/OpsApi"
import { SimGroup } from "@wagate/whatsapp/sim/SimApi"
import { FilesGroup } from "./FilesGroup.js"

export class GatewayApi extends WagateApi.add(OpsGroup.annotate(OpenApi.Exclude, true))
  .add(OpsWebhooksGroup.annotate(OpenApi.Exclude, true))
  .add(OpsStorageGroup.annotate(OpenApi.Exclude, true))
  .add(FilesGroup.annotate(OpenApi.Exclude, true))
  .add(OpsBillingGroup.annotate(OpenApi.Exclude, true))
  .add(PaymentsGroup.annotate(OpenApi.Exclude, true))
  .add(CabinetAuthGroup.annotate(OpenApi.Exclude, true))
  .add(CabinetGroup.annotate(OpenApi.Exclude, true))
{}

/** The same with the simulator's control surface (/sim/v1), served when the network is simulated. */
export class GatewaySimApi extends GatewayApi.add(SimGroup) {}
