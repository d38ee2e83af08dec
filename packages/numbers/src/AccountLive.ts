/**
 * The behaviour of an account's entity: the account-wide limits. Attachment slots are leases
 * that expire, so a slot held by a lost runner comes back on its own.
 */
import { AttachmentsBusy } from "@wagate/domain/ApiError"
import { AccountEntity, MAX_ATTACHMENTS_IN_FLIGHT } from "@wagate/entities/AccountEntity"
import * as Effect from "effect/Effect"
import * as DomainClock from "@wagate/domain/DomainClock"

export const AccountLive = AccountEntity.toLayer(
  Effect.sync(() => {
    const leases = new Map<string, number>()
    const live = (now: number) => {
      for (const [lease, until] of leases) if (until <= now) leases.delete(lease)
      return leases.size
    }
    return AccountEntity.of({
      AttachmentStart: ({ payload }) =>
        Effect.flatMap(DomainClock.now, (now) =>
          live(now) >= MAX_ATTACHMENTS_IN_FLIGHT && !leases.has(payload.lease)
            ? Effect.fail(new AttachmentsBusy({ retryAfter: 5 }))
            : Effect.sync(() => void leases.set(payload.lease, now + payload.ttlMs))),
      AttachmentEnd: ({ payload }) => Effect.sync(() => void leases.delete(payload.lease))
    })
  }),
  { concurrency: 1, maxIdleTime: "10 minutes" }
)
