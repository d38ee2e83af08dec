/**
 * Which URLs webhooks may be sent to: absolute http(s) without credentials, port 0 or a
 * fragment, and, unless the operator allows it (`WEBHOOK_ALLOW_PRIVATE_URLS`), only hosts on
 * public addresses, so that an account cannot make the gateway call into its own network. The address is checked when the
 * URL is set and again on every attempt (a name can be pointed elsewhere later); the attempt
 * then connects to the address that was checked.
 *
 * @since 1.0.0
 */
import { InvalidParam } from "@wagate/domain/ApiError"
import * as GuardedHttp from "@wagate/media/GuardedHttp"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"

/** @since 1.0.0 */
export const MAX_URL_LENGTH = 2048

/** Why a URL cannot be used. @since 1.0.0 */
export class UnusableUrl extends Data.TaggedError("UnusableUrl")<{ readonly reason: string }> {}

/** Host name to IP addresses. @since 1.0.0 */
export type Resolve = GuardedHttp.Resolve

/**
 * The URL's shape alone: absolute http(s), no user or password, no port 0, no fragment, at most
 * 2048 characters.
 *
 * @since 1.0.0
 */
export const parse = (raw: string): Either.Either<URL, UnusableUrl> => {
  const bad = (reason: string) => Either.left(new UnusableUrl({ reason }))
  const text = raw.trim()
  if (text.length > MAX_URL_LENGTH) return bad(`url is longer than ${MAX_URL_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return bad("url must be an absolute http or https URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return bad("url must be http or https")
  if (url.username !== "" || url.password !== "") return bad("url must not contain a user name or password")
  if (url.hostname === "") return bad("url must name a host")
  // Nothing listens on port 0: every delivery would fail.
  if (url.port === "0") return bad("url must not use port 0")
  // A fragment is never sent: a receiver would not see what the account meant it to carry.
  if (url.href.includes("#")) return bad("url must not contain a fragment (#)")
  return Either.right(url)
}

/**
 * The address to connect to for `url`: the host itself when it is an IP address, else the first
 * address it resolves to. With `allowPrivate` false, a host that is (or resolves to any) private,
 * loopback or otherwise non-public address is refused.
 *
 * @since 1.0.0
 */
export const target = (
  url: URL,
  options: { readonly allowPrivate: boolean; readonly resolve?: Resolve | undefined }
): Effect.Effect<GuardedHttp.Target, UnusableUrl> =>
  GuardedHttp.addressFor(url, { guard: !options.allowPrivate, resolve: options.resolve }).pipe(
    Effect.mapError((e) =>
      new UnusableUrl({
        reason: e.reason === "private"
          ? `${e.host} is a private or local address; webhooks go to public addresses only`
          : `${e.host} could not be resolved`
      })
    )
  )

/**
 * A URL an account may set, normalised, or `invalid_param` saying why not.
 *
 * @since 1.0.0
 */
export const check = (
  raw: string,
  options: { readonly allowPrivate: boolean; readonly resolve?: Resolve | undefined }
): Effect.Effect<string, InvalidParam> =>
  Effect.gen(function*() {
    const url = yield* parse(raw)
    yield* target(url, options)
    return url.href
  }).pipe(Effect.mapError((e) => new InvalidParam({ error: e.reason })))
