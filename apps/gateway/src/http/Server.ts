/**
 * The HTTP surface: the contract's handlers, authentication, the error middleware, the OpenAPI
 * document at /api/v1/openapi.json, the interactive docs at /docs and the MCP tool server.
 */
import { ClusterPage, PAGE_PATH as CLUSTER_PAGE_PATH } from "../ops/ClusterPage.js"
import type * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { SimNetwork } from "@wagate/whatsapp/sim/SimNetwork"
import { KeyAuth } from "../auth/KeyAuth.js"
import { OperatorToken } from "../auth/OperatorToken.js"
import { Settings } from "../Config.js"
import { McpLive } from "../mcp/McpLive.js"
import * as ApiErrors from "./ApiErrors.js"
import { AuthenticationLive } from "./Authentication.js"
import { GatewayApi, GatewaySimApi } from "./GatewayApi.js"
import { AccountHttp } from "./handlers/AccountHttp.js"
import { ChatsHttp } from "./handlers/ChatsHttp.js"
import { ContactsHttp } from "./handlers/ContactsHttp.js"
import { ExportsHttp } from "./handlers/ExportsHttp.js"
import { LimitsHttp } from "./handlers/LimitsHttp.js"
import { FilesHttp } from "./handlers/FilesHttp.js"
import { MediaHttp } from "./handlers/MediaHttp.js"
import { MessagesHttp } from "./handlers/MessagesHttp.js"
import { NumbersHttp } from "./handlers/NumbersHttp.js"
import { OpsBillingHttp, PaymentsHttp } from "./handlers/OpsBillingHttp.js"
import { OperatorAuthLive, OpsHttp } from "./handlers/OpsHttp.js"
import { OpsStorageHttp } from "./handlers/OpsStorageHttp.js"
import { OpsWebhooksHttp } from "./handlers/OpsWebhooksHttp.js"
import { PublicHttp } from "./handlers/PublicHttp.js"
import { GatewaySimHttp, SimAuthLive } from "./handlers/SimHttp.js"
import { StorageHttp } from "./handlers/StorageHttp.js"
import { WebhooksHttp } from "./handlers/WebhooksHttp.js"
import { NumberScope } from "./NumberScope.js"
import * as RequestId from "./RequestId.js"
import { CabinetCsrfLive, CabinetSessionLive } from "../cabinet/CabinetAuth.js"
import { CabinetAuthHttp } from "../cabinet/CabinetAuthHttp.js"
import { CabinetHttp } from "../cabinet/CabinetHttp.js"
import { CabinetLinks } from "../cabinet/CabinetLinks.js"
import { CabinetPages, PAGE_ROUTES as CABINET_PAGE_ROUTES } from "../cabinet/CabinetPages.js"
import { Mailer } from "@wagate/cabinet/Mailer"
import { ExportRecords } from "@wagate/exports/ExportRecords"
import * as RouteTable from "./RouteTable.js"

export const OPENAPI_PATH = "/api/v1/openapi.json"
export const DOCS_PATH = "/docs"

const Handlers = Layer.mergeAll(
    MessagesHttp,
    ChatsHttp,
    NumbersHttp,
    AccountHttp,
    LimitsHttp,
    ContactsHttp,
    ExportsHttp,
    PublicHttp,
    OpsHttp,
    WebhooksHttp,
    OpsWebhooksHttp,
    MediaHttp,
    StorageHttp,
    OpsStorageHttp,
    FilesHttp,
    OpsBillingHttp,
    PaymentsHttp,
    CabinetAuthHttp,
    CabinetHttp.pipe(Layer.provide(ExportRecords.Default))
).pipe(
  Layer.provide([AuthenticationLive, OperatorAuthLive, CabinetSessionLive, CabinetCsrfLive]),
  Layer.provide([KeyAuth.Default, NumberScope.Default, CabinetLinks.Default]),
  Layer.provide(Layer.unwrapEffect(Effect.map(Settings, (s) =>
    Option.match(s.smtpUrl, { onNone: () => Mailer.layerLog, onSome: (url) => Mailer.layerSmtp(url, s.mailFrom) }))))
)

const serve = <E, R>(api: HttpApi.HttpApi.Any, apiLayer: Layer.Layer<HttpApi.Api, E, R>) =>
  HttpApiBuilder.serve(RequestId.middleware).pipe(
    Layer.provide(HttpApiScalar.layer({ path: DOCS_PATH })),
    Layer.provide(ClusterPage),
    Layer.provide(CabinetPages),
    Layer.provide(McpLive.pipe(Layer.provide([KeyAuth.Default, NumberScope.Default]))),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: OPENAPI_PATH })),
    Layer.provide(Layer.unwrapEffect(Effect.map(Settings, ({ maxBodyBytes }) =>
      ApiErrors.layer(
        RouteTable.make([api], [["GET", OPENAPI_PATH], ["GET", DOCS_PATH], ["GET", CLUSTER_PAGE_PATH], ...CABINET_PAGE_ROUTES]),
        { maxBodyBytes }
      )))),
    Layer.provide(apiLayer),
    // Signed-link tokens (GET /files/<token>) are longer than the router's default 100 characters.
    Layer.provide(HttpRouter.setRouterConfig({ maxParamLength: 4096 }))
  )

/**
 * Serves the API on whatever HttpServer is provided; with the simulated network, also its
 * control surface under /sim/v1.
 */
export const HttpLive = Layer.unwrapEffect(Effect.gen(function*() {
  const sim = yield* Effect.serviceOption(SimNetwork)
  const tracing = yield* FiberRef.get(FiberRef.currentTracerEnabled)
  const served = Option.isNone(sim)
    ? serve(GatewayApi, HttpApiBuilder.api(GatewayApi).pipe(Layer.provide(Handlers)))
    : serve(
      GatewaySimApi,
      HttpApiBuilder.api(GatewaySimApi).pipe(
        Layer.provide([Handlers, GatewaySimHttp]),
        Layer.provide([SimAuthLive, Layer.succeed(SimNetwork, sim.value)])
      )
    )
  // Without a tracer the server's span of a request records nothing, yet it would still parse the
  // URL and copy the headers for its attributes on every request.
  return tracing ? served : HttpMiddleware.withTracerDisabledWhen(served, () => true)
})).pipe(Layer.provide(OperatorToken.Default))
