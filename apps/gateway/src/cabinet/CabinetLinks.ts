/**
 * One-time links of the cabinet: confirming the email after sign-up (valid 2 days) and setting a
 * new password (valid 1 hour). Only the SHA-256 of a link's token is stored; the link is spent by
 * its first use.
 */
import { Mailer } from "@wagate/cabinet/Mailer"
import type { AccountId } from "@wagate/domain/Ids"
import { CabinetUsers, type TokenKind } from "@wagate/store/CabinetUsers"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Settings } from "../Config.js"
import { digest, secret } from "./CabinetAuth.js"

const HOUR_MS = 3_600_000
const VALID_MS: Record<TokenKind, number> = { verify: 48 * HOUR_MS, reset: HOUR_MS }
const PAGE: Record<TokenKind, string> = { verify: "/cabinet/confirm", reset: "/cabinet/reset/new" }

export class CabinetLinks extends Effect.Service<CabinetLinks>()("@wagate/gateway/CabinetLinks", {
  effect: Effect.gen(function*() {
    const users = yield* CabinetUsers
    const mailer = yield* Mailer
    const { publicUrl, httpPort } = yield* Settings
    const base = Option.getOrElse(publicUrl, () => `http://localhost:${httpPort}`).replace(/\/+$/, "")

    /** A new link of `kind` for the account, and when it stops working. */
    const issue = Effect.fn("CabinetLinks.issue")(function*(accountId: AccountId, kind: TokenKind) {
      const token = secret()
      const expiresAt = new Date((yield* Clock.currentTimeMillis) + VALID_MS[kind])
      yield* users.createToken({ hash: digest(token), accountId, kind, expiresAt })
      return { url: `${base}${PAGE[kind]}?token=${token}`, expires_at: expiresAt.toISOString() }
    })

    /** The account a link was for, spending it; None when it is unknown, spent or expired. */
    const spend = (token: string, kind: TokenKind) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => users.useToken(digest(token), kind, new Date(now)))

    /** Sends mail in the background: the answer must not wait for (or reveal) the mail server. */
    const mail = (to: string, subject: string, text: string) =>
      Effect.asVoid(Effect.forkDaemon(mailer.send({ to, subject, text })))

    return { issue, spend, mail } as const
  })
}) {}
