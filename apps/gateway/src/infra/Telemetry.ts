/**
 * How a process reports: the log format (`LOG_FORMAT`: `pretty` for a terminal, `json` for a
 * log pipeline, one object a line with the annotations such as `request_id`, or `logfmt`), the
 * lowest level logged (`LOG_LEVEL`), and
 * traces over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set.
 * The cluster carries a request's span from the api process into the runner that handles its
 * entity call, so one send is one trace across both. Without an endpoint no span is made at all.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Config from "effect/Config"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"

export const settings = Config.all({
  logFormat: Config.literal("pretty", "json", "logfmt")("LOG_FORMAT").pipe(
    Config.withDefault("pretty" as const),
    Config.withDescription("pretty (default), json (one object a line) or logfmt")
  ),
  logLevel: Config.logLevel("LOG_LEVEL").pipe(
    Config.withDefault(LogLevel.Info),
    Config.withDescription("Lowest level logged: Info by default; Debug adds a line per HTTP request")
  ),
  endpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(
    Config.withDescription("OTLP/HTTP collector base URL; traces go to <endpoint>/v1/traces")
  )),
  tracesEndpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").pipe(
    Config.withDescription("Full OTLP/HTTP traces URL, instead of OTEL_EXPORTER_OTLP_ENDPOINT")
  )),
  serviceName: Config.option(Config.string("OTEL_SERVICE_NAME")),
  role: Config.string("WAGATE_ROLE").pipe(Config.withDefault("all"))
})

export type Settings = Config.Config.Success<typeof settings>

/** Where spans are exported, if anywhere. */
export const tracesUrl = (s: Settings): Option.Option<string> => {
  const given = (o: Option.Option<string>) => Option.filter(o, (url) => url.trim() !== "")
  return Option.orElse(given(s.tracesEndpoint), () => Option.map(given(s.endpoint), (base) => `${base.replace(/\/$/, "")}/v1/traces`))
}

/**
 * A library's warning about what every start with linked numbers does, logged at Debug: the
 * cluster reads the numbers' keep-alive requests before the Number entity type has registered
 * (some 100 ms later with the embedded database, whose single runner holds its shards at once),
 * and retries them once it has. An entity type that never registers is still reported: after its
 * registration timeout the cluster fails those messages with a defect, logged as an error.
 */
const routine = (options: Logger.Logger.Options<unknown>) =>
  options.logLevel === LogLevel.Warning &&
  (Array.isArray(options.message) ? options.message[0] : options.message) ===
    "Could not find entity manager for address, retrying"

const withRoutineAtDebug = (logger: Logger.Logger<unknown, void>, minimum: LogLevel.LogLevel) =>
  Logger.make<unknown, void>((options) => {
    if (!routine(options)) return logger.log(options)
    if (!LogLevel.greaterThan(minimum, LogLevel.Debug)) logger.log({ ...options, logLevel: LogLevel.Debug })
  })

export const layer = (s: Settings) => {
  const format = s.logFormat === "json"
    ? Logger.withConsoleLog(Logger.jsonLogger)
    : s.logFormat === "logfmt"
    ? Logger.withConsoleLog(Logger.logfmtLogger)
    : Logger.prettyLoggerDefault
  const logger = Logger.replace(Logger.defaultLogger, withRoutineAtDebug(format, s.logLevel))
  const tracing = Option.match(tracesUrl(s), {
    onNone: () => Layer.empty,
    onSome: (url) =>
      OtlpTracer.layer({
        url,
        resource: { serviceName: Option.getOrElse(s.serviceName, () => `wagate-${s.role}`) },
        exportInterval: "2 seconds"
      }).pipe(Layer.provide([FetchHttpClient.layer, OtlpSerialization.layerJson]))
  })
  return Layer.mergeAll(logger, Logger.minimumLogLevel(s.logLevel), tracing)
}
