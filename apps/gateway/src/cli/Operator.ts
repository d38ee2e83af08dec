/**
 * The CLI's connection to a running gateway: the operator API client, built only when a command
 * runs (so `--help` and `--completions` need no gateway), and how its answers are printed.
 *
 * Gateway address: WAGATE_URL (default http://127.0.0.1:$HTTP_PORT or 3000). Token:
 * OPERATOR_TOKEN, or the file the gateway wrote in $DATA_DIR (default ./data).
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { existsSync, readFileSync } from "node:fs"
import { tokenFile } from "../auth/OperatorToken.js"
import { tcpPort } from "../SettingBounds.js"
import { describeIssue } from "../http/ApiErrors.js"

/**
 * A command failed and has said why (on stdout as `{error, code}`, or on stderr): the process
 * exits with 1 and prints nothing more.
 */
export class CommandFailed extends Data.TaggedError("CommandFailed")<{ readonly message: string }> {}

/** The gateway answered something this CLI cannot read (a gateway of another version). */
class UnreadableAnswer extends Data.TaggedError("UnreadableAnswer")<{ readonly message: string }> {}

const settings = Config.all({
  url: Config.option(Config.string("WAGATE_URL")),
  port: tcpPort("HTTP_PORT").pipe(Config.withDefault(3000)),
  token: Config.option(Config.redacted("OPERATOR_TOKEN")),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data"))
})

/** What the gateway answers when it refuses a request. */
const Refusal = Schema.Struct({ error: Schema.String, code: Schema.String })
const decodeRefusal = Schema.decodeUnknownOption(Schema.parseJson(Refusal))

/**
 * An error answer whose body is the gateway's `{error, code}` fails with it (as the cause of a
 * StatusCode error), whatever its status: the operator API's schema declares only some statuses,
 * and one it does not (413 from the body limit, 408, 429) would otherwise be a "Decode error". The
 * body is read as bytes, which the response keeps, so any other answer is decoded as before.
 */
const refusals = HttpClient.transformResponse(Effect.flatMap((response) =>
  response.status < 400
    ? Effect.succeed(response)
    : Effect.flatMap(response.arrayBuffer, (bytes) =>
      Option.match(decodeRefusal(new TextDecoder().decode(bytes)), {
        onNone: () => Effect.succeed(response),
        onSome: (refusal) =>
          Effect.fail(
            new HttpClientError.ResponseError({
              request: response.request,
              response,
              reason: "StatusCode",
              description: refusal.error,
              cause: refusal
            })
          )
      }))
))

/** The operator API of the gateway the CLI talks to. */
export class Operator extends Context.Tag("wagate/cli/Operator")<Operator, OpsClient.Client>() {
  static readonly layer = Layer.effect(
    Operator,
    Effect.gen(function*() {
      const config = yield* settings.pipe(
        Effect.catchAll((e) => Effect.zipRight(Console.error(String(e)), new CommandFailed({ message: String(e) })))
      )
      const file = tokenFile(config.dataDir)
      const token = Option.isSome(config.token)
        ? Redacted.value(config.token.value)
        : existsSync(file)
        ? readFileSync(file, "utf8").trim()
        : yield* Effect.zipRight(
          Console.error(`No OPERATOR_TOKEN and no ${file}: start the gateway once`),
          new CommandFailed({ message: "no operator token" })
        )
      return yield* OpsClient.make({
        baseUrl: Option.getOrElse(config.url, () => `http://127.0.0.1:${config.port}`),
        token,
        // An answer that does not decode is told apart here, so any other ParseError is a value
        // the client refused to send (see errorBody).
        transformResponse: Effect.catchIf(
          ParseResult.isParseError,
          (e) => new UnreadableAnswer({ message: `The gateway's answer could not be read: ${e.message}` })
        )
      }).pipe(Effect.updateService(HttpClient.HttpClient, refusals))
    })
  ).pipe(Layer.provide(NodeHttpClient.layerUndici))
}

export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

/**
 * `{error, code}` of a failure: the gateway's own, or the CLI's when the call did not get that
 * far. A value the client refused to send (the operator API's own schema, e.g. a negative
 * `--amount`) is refused as the gateway would: `invalid_param`, naming the field. `cli_error` is
 * left for an answer the CLI cannot read.
 */
const errorBody = (failure: unknown): { readonly error: string; readonly code: string } => {
  if (HttpClientError.isHttpClientError(failure) && Schema.is(Refusal)(failure.cause)) {
    return { error: failure.cause.error, code: failure.cause.code }
  }
  const e = failure as { code?: unknown; error?: unknown; message?: unknown; _tag?: unknown }
  if (typeof e?.code === "string") return { error: String(e.error ?? e.message), code: e.code }
  if (ParseResult.isParseError(failure)) {
    return { error: describeIssue(ParseResult.ArrayFormatter.formatErrorSync(failure), failure.message), code: "invalid_param" }
  }
  return {
    error: String(e?.message ?? failure),
    code: e?._tag === "RequestError" ? "gateway_unreachable" : "cli_error"
  }
}

/**
 * A call of the operator API whose failure is printed as `{error, code}` on stdout and ends the
 * process with exit code 1.
 */
export const reported = <A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, CommandFailed, R> =>
  Effect.catchAll(call, (failure) => {
    if (failure instanceof CommandFailed) return Effect.fail(failure)
    const body = errorBody(failure)
    return Effect.zipRight(printJson(body), new CommandFailed({ message: body.error }))
  })

/** Runs a call of the operator API and prints its answer as JSON (or its failure, see `reported`). */
export const answer = <A, E>(call: (ops: OpsClient.Client) => Effect.Effect<A, E>) =>
  withOperator((ops) => Effect.flatMap(reported(call(ops)), printJson))

/** Runs `use` with the operator API, connected only now (so `--help` needs no gateway). */
export const withOperator = <A, E, R>(use: (ops: OpsClient.Client) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(Operator, use).pipe(Effect.provide(Operator.layer))

/** A command group run without a command: point at its help. */
export const group = (name: string) => () =>
  Effect.zipRight(
    Console.error(`Choose a command: ${["wagate", name].filter(Boolean).join(" ")} --help lists them`),
    new CommandFailed({ message: "no command" })
  )
