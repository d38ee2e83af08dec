/**
 * One person, one chat: a person first known only by a LID (chat `<lid>@lid`, no phone) whose
 * phone the number learns later is merged into the phone's chat and contact; so is a phone
 * written in other digits than those WhatsApp knows the person by (Brazil's ninth digit,
 * Mexico's 521/52), which is kept as an alias of that phone.
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

const decodeLids = Schema.decodeUnknown(Schema.Array(Schema.Struct({ lid: Schema.String })))
const decodeCanonical = Schema.decodeUnknown(Schema.Array(Schema.Struct({ canonical: Schema.String })))

/** @since 1.0.0 */
export interface LidPhone {
  /** `<lid>@lid` */
  readonly lid: string
  /** digits */
  readonly phone: string
}

/** @since 1.0.0 */
export const make = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient

  /**
   * Re-points the messages and files of chat `from` to `<phone>@c.us` and makes the two chats
   * one: counts added, the later last message, the earlier start. `peerLid` is the LID the
   * merged chat and its messages know the person by; `null`: the messages keep theirs, and the
   * phone's chat its own, or else takes the old chat's.
   */
  const moveChat = (numberId: number, from: string, phone: string, peerLid: string | null) =>
    Effect.gen(function*() {
      const chat = `${phone}@c.us`
      const lid = peerLid === null ? sql`old.peer_lid` : sql`${peerLid}`
      yield* sql`
        UPDATE messages SET chat_id = ${chat}, peer = ${phone}${peerLid === null ? sql`` : sql`, peer_lid = ${peerLid}`}
        WHERE number_id = ${numberId} AND chat_id = ${from}`
      yield* sql`UPDATE media_files SET chat_id = ${chat} WHERE number_id = ${numberId} AND chat_id = ${from}`
      yield* sql`
        WITH old AS (
          DELETE FROM chats WHERE number_id = ${numberId} AND chat_id = ${from} RETURNING *
        )
        INSERT INTO chats (number_id, chat_id, account_id, peer, peer_lid, name, is_group, group_subject,
                           last_message_id, last_message_at, message_count, incoming_count, outgoing_count, created_at)
        SELECT number_id, ${chat}, account_id, ${phone}, ${lid}, name, false, NULL, last_message_id, last_message_at,
               message_count, incoming_count, outgoing_count, created_at
        FROM old
        ON CONFLICT (number_id, chat_id) DO UPDATE SET
          peer_lid = ${peerLid === null ? sql`coalesce(chats.peer_lid, EXCLUDED.peer_lid)` : sql`EXCLUDED.peer_lid`},
          name = coalesce(chats.name, EXCLUDED.name),
          last_message_id = CASE WHEN chats.last_message_at IS NULL OR chats.last_message_at <= EXCLUDED.last_message_at
                                 THEN EXCLUDED.last_message_id ELSE chats.last_message_id END,
          last_message_at = greatest(chats.last_message_at, EXCLUDED.last_message_at),
          message_count = chats.message_count + EXCLUDED.message_count,
          incoming_count = chats.incoming_count + EXCLUDED.incoming_count,
          outgoing_count = chats.outgoing_count + EXCLUDED.outgoing_count,
          created_at = least(chats.created_at, EXCLUDED.created_at)`
    })

  /**
   * Makes the contact `old` selects the phone's: who wrote first is decided by whichever of the
   * two talked first. `lidWins`: the merged contact takes the old one's LID (a LID-only person);
   * otherwise the phone's contact keeps its own.
   */
  const moveContact = (numberId: number, old: Statement.Fragment, phone: string, lidWins: boolean) =>
    sql`
      WITH old AS (
        DELETE FROM contacts WHERE number_id = ${numberId} AND ${old} RETURNING *
      )
      INSERT INTO contacts (number_id, phone, lid, name, wrote_first, first_contact_at, last_contact_at,
                            first_in_at, first_out_at)
      SELECT number_id, ${phone}, lid, name, wrote_first, first_contact_at, last_contact_at, first_in_at, first_out_at
      FROM old
      ON CONFLICT (number_id, phone) DO UPDATE SET
        lid = ${lidWins ? sql`EXCLUDED.lid` : sql`coalesce(contacts.lid, EXCLUDED.lid)`},
        name = coalesce(contacts.name, EXCLUDED.name),
        wrote_first = CASE WHEN EXCLUDED.first_contact_at < contacts.first_contact_at
                           THEN EXCLUDED.wrote_first ELSE contacts.wrote_first END,
        first_contact_at = least(contacts.first_contact_at, EXCLUDED.first_contact_at),
        last_contact_at = greatest(contacts.last_contact_at, EXCLUDED.last_contact_at),
        first_in_at = least(contacts.first_in_at, EXCLUDED.first_in_at),
        first_out_at = least(contacts.first_out_at, EXCLUDED.first_out_at)`

  /** Merges one LID-only person into its phone, in one transaction. */
  const mergeOne = (numberId: number, { lid, phone }: LidPhone) =>
    Effect.gen(function*() {
      yield* moveChat(numberId, lid, phone, lid)
      yield* sql`
        UPDATE chats SET peer_lid = ${lid}
        WHERE number_id = ${numberId} AND chat_id = ${`${phone}@c.us`} AND peer_lid IS NULL`
      yield* moveContact(numberId, sql`phone IS NULL AND lid = ${lid}`, phone, true)
    }).pipe(sql.withTransaction)

  /**
   * The number learned which phone these LIDs are: each LID-only person among them (its contact
   * and chat `<lid>@lid`) becomes the phone's — messages and files re-pointed to `<phone>@c.us`,
   * the two chats and contacts one. Pairs of people never seen as LID-only change nothing.
   * Returns the LIDs merged.
   */
  const mergeLids = Effect.fn("Conversations.mergeLids")(function*(numberId: number, pairs: ReadonlyArray<LidPhone>) {
    if (pairs.length === 0) return [] as ReadonlyArray<string>
    const lids = [...new Set(pairs.map((p) => p.lid))]
    const found = yield* sql`
      SELECT lid FROM contacts WHERE number_id = ${numberId} AND phone IS NULL AND lid IN ${sql.in(lids)}
      UNION
      SELECT chat_id AS lid FROM chats WHERE number_id = ${numberId} AND chat_id IN ${sql.in(lids)}`.pipe(
      Effect.flatMap(decodeLids)
    )
    const waiting = new Set(found.map((r) => r.lid))
    const merged: Array<string> = []
    for (const pair of pairs) {
      if (!waiting.has(pair.lid)) continue
      waiting.delete(pair.lid)
      yield* mergeOne(numberId, pair)
      merged.push(pair.lid)
    }
    return merged as ReadonlyArray<string>
  }, Effect.orDie)

  /**
   * WhatsApp knows the phone `asked` as `phone`: the chat and contact of `asked` (a first message
   * to it, recorded before WhatsApp answered) become `phone`'s, and `asked` is kept as its alias.
   * One transaction; a pair merged before changes nothing more.
   */
  const mergePhone = Effect.fn("Conversations.mergePhone")(function*(numberId: number, asked: string, phone: string) {
    if (asked === phone) return
    yield* sql`
      INSERT INTO phone_aliases (number_id, phone, canonical) VALUES (${numberId}, ${asked}, ${phone})
      ON CONFLICT (number_id, phone) DO UPDATE SET canonical = EXCLUDED.canonical`
    yield* moveChat(numberId, `${asked}@c.us`, phone, null)
    yield* moveContact(numberId, sql`phone = ${asked}`, phone, false)
  }, sql.withTransaction, Effect.orDie)

  /** The phone WhatsApp knows `phone` as, when the number learned it differs (`mergePhone`). */
  const canonicalOf = Effect.fn("Conversations.canonicalOf")(function*(numberId: number, phone: string) {
    const [row] = yield* sql`
      SELECT canonical FROM phone_aliases WHERE number_id = ${numberId} AND phone = ${phone}`.pipe(
      Effect.flatMap(decodeCanonical)
    )
    return row === undefined ? null : row.canonical
  }, Effect.orDie)

  return { mergeLids, mergePhone, canonicalOf } as const
})
