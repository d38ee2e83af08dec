/**
 * The standalone simulated WhatsApp network (`npm run simulator`): one network for every runner
 * of a cluster, reached by their simulator drivers at `WA_SIM_URL`, and its control API under
 * `/sim/v1` (operator token) so a test reads what the network received from all of them. It
 * outlives any runner: a killed runner's sessions detach, and reattach from the runner that
 * takes its numbers over.
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as RpcServer from "@effect/rpc/RpcServer"
import * as SimNetwork from "@wagate/whatsapp/sim/SimNetwork"
import { SimRpcs } from "@wagate/whatsapp/sim/SimProtocol"
import { RPC_PATH } from "@wagate/whatsapp/sim/SimRemote"
import * as SimServer from "@wagate/whatsapp/sim/SimServer"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { createServer } from "node:http"
import { OperatorToken } from "./auth/OperatorToken.js"
import { Settings } from "./Config.js"
import { tcpPort } from "./SettingBounds.js"
import { SimAuthLive, SimHttp, SimHttpApi } from "./http/handlers/SimHttp.js"
import { RequestCounter } from "./infra/RequestCounter.js"

const listen = Config.all({
  host: Config.string("SIM_HOST").pipe(Config.withDefault("127.0.0.1")),
  port: tcpPort("SIM_PORT").pipe(
    Config.withDefault(3100),
    Config.withDescription("Port of the standalone simulator (runners reach it at WA_SIM_URL)")
  )
})

/** The lowest level logged; `debug` shows every session opened and closed, with its runner. */
const logLevel = Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))

const Routes = Layer.mergeAll(
  HttpLayerRouter.addHttpApi(SimHttpApi).pipe(
    Layer.provide(SimHttp),
    Layer.provide(SimAuthLive),
    // Wrong tokens are throttled per address, counted in this process.
    Layer.provide([OperatorToken.Default, RequestCounter.layerMemory])
  ),
  RpcServer.layerHttpRouter({ group: SimRpcs, path: RPC_PATH, protocol: "websocket", disableTracing: true }).pipe(
    Layer.provide(SimServer.layerHandlers),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
)

const Main = Layer.unwrapEffect(Effect.gen(function*() {
  const { host, port } = yield* listen
  yield* Effect.logInfo(`wagate simulator on http://${host}:${port} (runners: WA_SIM_URL=http://${host}:${port})`)
  return HttpLayerRouter.serve(Routes, { disableLogger: true }).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { host, port }))
  )
})).pipe(
  Layer.provide(SimNetwork.layer()),
  Layer.provide(Settings.layer),
  Layer.provide(NodeContext.layer),
  Layer.provide(Layer.unwrapEffect(Effect.map(logLevel, Logger.minimumLogLevel)))
)

NodeRuntime.runMain(Layer.launch(Main).pipe(Effect.withTracerEnabled(false)))
