/**
 * Mail to cabinet users (confirm the email, reset the password). With an SMTP server set
 * (`SMTP_URL`) it is sent through it; without one the message, link included, goes to the log,
 * where the operator finds it (the CLI can also issue a reset link: `wagate cabinet reset-link`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { createTransport } from "nodemailer"

export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
}

export interface MailerService {
  readonly send: (mail: Mail) => Effect.Effect<void>
}

export class Mailer extends Context.Tag("@wagate/cabinet/Mailer")<Mailer, MailerService>() {
  /** Writes each message to the log (no SMTP server configured). */
  static readonly layerLog = Layer.succeed(Mailer, {
    send: (mail) => Effect.logWarning(`cabinet mail (no SMTP_URL set) to ${mail.to}: ${mail.subject}\n${mail.text}`)
  })

  /** Sends through the SMTP server at `url` (smtp://user:pass@host:587, smtps:// for TLS). */
  static readonly layerSmtp = (url: Redacted.Redacted, from: string) =>
    Layer.sync(Mailer, () => {
      const transport = createTransport(Redacted.value(url))
      return {
        send: (mail) =>
          Effect.tryPromise(() => transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text })).pipe(
            // A mail that cannot be sent must not tell the requester anything different; the log says why.
            Effect.catchAll((e) => Effect.logError(`cabinet mail to ${mail.to} not sent: ${String(e.error)}`)),
            Effect.asVoid
          )
      }
    })
}
