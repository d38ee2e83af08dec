/**
 * Turns an API key into the principal of a request, and enforces the two request limits of the
 * spec: 3000 requests a minute per key, and 30 wrong-key requests a minute per IP address (the
 * operator token's wrong tries are counted apart, OperatorCheck).
 */
import { InvalidKey, KeyRateLimited, RateLimited, Unauthorized } from "@wagate/domain/ApiError"
import type { Principal } from "@wagate/domain/Auth"
import type { ApiKeyId } from "@wagate/domain/Ids"
import * as Traced from "@wagate/domain/Traced"
import * as ApiKeys from "@wagate/store/ApiKeys"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { RequestCounter } from "../infra/RequestCounter.js"
import { KeyRevocations } from "./KeyRevocations.js"

export const KEY_REQUESTS_PER_MINUTE = 3000
export const WRONG_KEYS_PER_MINUTE = 30
const MINUTE = 60_000
/** The answer over the key's limit: its counter starts again within the minute. */
export const keyRateLimited = () => new KeyRateLimited({ retryAfter: 60 })
/** A cached valid key is re-read from the database at least this often. */
const CACHE_TTL_MS = 5 * MINUTE

/**
 * Whose credential a request got wrong. Customers' API keys (the public API and MCP) and the
 * operator token (/ops/v1, /sim/v1) are counted apart per address, so that customers behind the
 * operator's address (an office, a NAT, a proxy forwarding the client address) cannot lock the
 * operator's wrong tries into 429, nor the operator theirs.
 */
export type Credential = "key" | "operator"

const wrongBuckets: Record<Credential, { readonly prefix: string; readonly error: string }> = {
  key: { prefix: "ip:", error: "Too many requests with a wrong key from this address" },
  operator: { prefix: "operator:ip:", error: "Too many requests with a wrong operator token from this address" }
}

/**
 * A wrong `credential` from `ip`: `invalid`, or from the 30th of that credential in a minute
 * 429 rate_limited.
 */
export const wrongCredential = <E>(
  counter: Context.Tag.Service<RequestCounter>,
  credential: Credential,
  ip: string,
  invalid: E
) => {
  const bucket = wrongBuckets[credential]
  return Effect.flatMap(counter.hit(`${bucket.prefix}${ip}`, MINUTE), (wrong) =>
    Effect.fail(
      wrong.count >= WRONG_KEYS_PER_MINUTE
        ? new RateLimited({ error: bucket.error, retryAfter: 60 })
        : invalid
    ))
}

export class KeyAuth extends Effect.Service<KeyAuth>()("@wagate/gateway/KeyAuth", {
  scoped: Effect.gen(function*() {
    const keys = yield* ApiKeys.ApiKeys
    const counter = yield* RequestCounter
    const revocations = yield* KeyRevocations
    const scope = yield* Effect.scope
    const cache = new Map<string, { readonly principal: Principal; readonly until: number }>()
    // When each key's last use was last written: written at most once a minute per key.
    const touched = new Map<number, number>()
    yield* revocations.listen((hash) => (hash === null ? cache.clear() : cache.delete(hash)))

    const lookup = Effect.fnUntraced(function*(key: string) {
      const keyHash = ApiKeys.hash(key)
      const hex = keyHash.toString("hex")
      const now = yield* Clock.currentTimeMillis
      const cached = cache.get(hex)
      if (cached && cached.until > now && revocations.reliable()) return Option.some(cached.principal)
      const found = yield* keys.findByHash(keyHash)
      if (Option.isSome(found) && revocations.reliable()) {
        if (cache.size > 100_000) cache.clear()
        cache.set(hex, { principal: found.value, until: now + CACHE_TTL_MS })
      }
      return found
    })

    /**
     * The principal of `key`, or why there is none. A wrong key counts against the caller's IP
     * address; from the 30th in a minute the answer is 429 instead of 401.
     */
    const authenticate = Effect.fnUntraced(function*(key: string | undefined, ip: string) {
      if (key === undefined || key === "") return yield* new Unauthorized()
      const principal = ApiKeys.isWellFormed(key) ? yield* lookup(key) : Option.none<Principal>()
      if (Option.isNone(principal)) return yield* wrongCredential(counter, "key", ip, new InvalidKey())
      const used = yield* counter.hit(`key:${principal.value.keyId}`, MINUTE)
      if (used.count > KEY_REQUESTS_PER_MINUTE) return yield* keyRateLimited()
      const now = yield* Clock.currentTimeMillis
      const keyId = principal.value.keyId
      if ((touched.get(keyId) ?? 0) <= now - MINUTE) {
        if (touched.size > 100_000) touched.clear()
        touched.set(keyId, now)
        // Not waited for: the request does not need it, and a failure only leaves it older.
        yield* keys.touch({ keyId, at: new Date(now) }).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("recording a key's last use failed", cause)),
          Effect.forkIn(scope)
        )
      }
      return principal.value
    }, Traced.span("KeyAuth.authenticate"))

    /**
     * Counts `requests` more requests on a key in this minute (the further messages of an MCP
     * batch, each a request of its own): how many of them, in order, fit under the key's limit.
     */
    const countMore = (keyId: ApiKeyId, requests: number) =>
      Effect.map(
        counter.hit(`key:${keyId}`, MINUTE, requests),
        (used) => Math.max(0, Math.min(requests, KEY_REQUESTS_PER_MINUTE - (used.count - requests)))
      )

    /** Drops a revoked key here and in every other process. */
    const revoked = (keyHash: Buffer) =>
      Effect.suspend(() => {
        const hex = keyHash.toString("hex")
        cache.delete(hex)
        return revocations.publish(hex)
      })

    return { authenticate, countMore, revoked } as const
  })
}) {}
