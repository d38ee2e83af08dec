/**
 * Passwords hashed with Argon2id (`@node-rs/argon2`: a Rust build shipped as a prebuilt npm
 * package per platform, so installing downloads nothing else). The parameters are OWASP's
 * baseline for Argon2id: 19 MiB of memory, 2 passes, one lane.
 */
import { type Algorithm, hash as argonHash, verify as argonVerify } from "@node-rs/argon2"
import * as Effect from "effect/Effect"

// Algorithm.Argon2id is 2 (a const enum, which isolated modules cannot read).
const OPTIONS = { algorithm: 2 as Algorithm, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

export const hash = (password: string): Effect.Effect<string> =>
  Effect.promise(() => argonHash(password.normalize("NFC"), OPTIONS))

/** Whether `password` matches `stored`; a stored value that is not a hash matches nothing. */
export const verify = (stored: string, password: string): Effect.Effect<boolean> =>
  Effect.promise(() => argonVerify(stored, password.normalize("NFC")).catch(() => false))

/**
 * A hash of nothing anyone knows, verified against when the email is unknown, so that a wrong
 * email takes as long to refuse as a wrong password.
 */
export const decoy: Effect.Effect<string> = Effect.cached(hash(`decoy-${Math.random()}`)).pipe(Effect.runSync)
