/**
 * Signing up, confirming the email, logging in and resetting a password. None of the answers
 * tells whether an email has an account: sign-up and reset answer the same in every case (what
 * differs goes by mail to the address's owner), a wrong email and a wrong password give the
 * same 401 after the same Argon2id work, and throttling counts any email alike.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Password from "@wagate/cabinet/Password"
import { InvalidCredentials, InvalidParam, NotFound } from "@wagate/domain/ApiError"
import { CabinetUsers } from "@wagate/store/CabinetUsers"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { GatewayApi } from "../http/GatewayApi.js"
import { startSession, throttle } from "./CabinetAuth.js"
import { CabinetLinks } from "./CabinetLinks.js"

// In English, as every API answer; the pages say these in their own language (by the error's code).
const SIGNED_UP = "Check your mailbox: we have sent a link to confirm the address."
const RESET_SENT = "If this email has an account, a link to set a new password is on its way (valid 1 hour)."
const BAD_LINK = "This link is not valid: it was used already or has expired."

export const CabinetAuthHttp = HttpApiBuilder.group(GatewayApi, "cabinetAuth", (handlers) =>
  Effect.gen(function*() {
    const users = yield* CabinetUsers
    const links = yield* CabinetLinks

    const sendConfirmation = (accountId: Parameters<typeof links.issue>[0], email: string) =>
      Effect.flatMap(links.issue(accountId, "verify"), ({ url }) =>
        links.mail(
          email,
          "wagate: confirm your email / подтвердите адрес",
          `Open this link to confirm your email and enter the cabinet (valid 2 days):\n${url}\n\n` +
            `Откройте ссылку, чтобы подтвердить адрес и войти в кабинет (действует 2 дня):\n${url}\n`
        ))
    const sendReset = (accountId: Parameters<typeof links.issue>[0], email: string, intro: string) =>
      Effect.flatMap(links.issue(accountId, "reset"), ({ url }) =>
        links.mail(
          email,
          "wagate: set a new password / новый пароль",
          `${intro}\n\nSet a new password (the link works once, for 1 hour):\n${url}\n\n` +
            `Задайте новый пароль (ссылка работает один раз, 1 час):\n${url}\n\n` +
            "If you did not ask for this, ignore this mail. Если вы не запрашивали, просто игнорируйте письмо.\n"
        ))

    return handlers
      .handle("signUp", ({ payload }) =>
        Effect.gen(function*() {
          yield* throttle("signup", null)
          const email = payload.email.trim()
          const passwordHash = yield* Password.hash(payload.password)
          yield* users.signUp({ email, company: payload.company.trim(), passwordHash }).pipe(
            Effect.flatMap((accountId) => sendConfirmation(accountId, email)),
            Effect.catchTag("EmailTaken", () =>
              Effect.flatMap(users.byEmail(email), (found) =>
                Option.isNone(found) ? Effect.void : sendReset(
                  found.value.accountId,
                  found.value.email,
                  "Someone (perhaps you) tried to sign up with this email, which already has an account. " +
                    "Кто-то (возможно, вы) пытался зарегистрироваться с этим адресом, а кабинет у него уже есть."
                )))
          )
          return { message: SIGNED_UP }
        }))
      .handle("confirm", ({ payload }) =>
        Effect.gen(function*() {
          const accountId = yield* links.spend(payload.token, "verify")
          if (Option.isNone(accountId)) return yield* new NotFound({ error: BAD_LINK })
          yield* users.verify(accountId.value)
          return yield* startSession(accountId.value, {})
        }))
      .handle("logIn", ({ payload }) =>
        Effect.gen(function*() {
          yield* throttle("login", payload.email)
          const found = yield* users.byEmail(payload.email.trim())
          const stored = Option.isSome(found) && found.value.passwordHash !== null ? found.value.passwordHash : null
          const ok = yield* Password.verify(stored ?? (yield* Password.decoy), payload.password)
          if (!ok || stored === null || Option.isNone(found)) return yield* new InvalidCredentials()
          if (!found.value.verified) {
            // Only the password's owner gets this far: telling them reveals nothing.
            yield* sendConfirmation(found.value.accountId, found.value.email)
            return yield* new InvalidParam({
              error: "Confirm your email first: we have sent the link again."
            })
          }
          return yield* startSession(found.value.accountId, { email: found.value.email })
        }))
      .handle("requestReset", ({ payload }) =>
        Effect.gen(function*() {
          yield* throttle("reset", payload.email)
          const found = yield* users.byEmail(payload.email.trim())
          if (Option.isSome(found)) {
            yield* sendReset(found.value.accountId, found.value.email, "A new password was asked for in the wagate cabinet.")
          }
          return { message: RESET_SENT }
        }))
      .handle("reset", ({ payload }) =>
        Effect.gen(function*() {
          const accountId = yield* links.spend(payload.token, "reset")
          if (Option.isNone(accountId)) return yield* new NotFound({ error: BAD_LINK })
          yield* users.setPassword(accountId.value, yield* Password.hash(payload.password))
          return yield* startSession(accountId.value, {})
        }))
  }))
