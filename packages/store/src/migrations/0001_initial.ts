import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * The whole data model. Money is integer tiyn (1/100 KZT); every instant is timestamptz; ids are
 * bigint and reach the API as numbers.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE accounts (
      id bigserial PRIMARY KEY,
      email text NOT NULL,
      company text NOT NULL,
      numbers_limit integer NOT NULL DEFAULT 10,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX accounts_email ON accounts (lower(email))`

  yield* sql`
    CREATE TABLE numbers (
      id bigserial PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      phone text NOT NULL,
      status text NOT NULL DEFAULT 'none',
      paused boolean NOT NULL DEFAULT false,
      connected_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX numbers_phone_live ON numbers (phone) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX numbers_account ON numbers (account_id, id)`

  // Keys are stored only as SHA-256 of the whole key; `prefix` is the readable start for humans.
  yield* sql`
    CREATE TABLE api_keys (
      id bigserial PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      number_id bigint REFERENCES numbers (id),
      prefix text NOT NULL,
      hash bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz,
      replaced_by bigint REFERENCES api_keys (id)
    )`
  yield* sql`CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash)`
  yield* sql`CREATE INDEX api_keys_account ON api_keys (account_id)`

  // WhatsApp linked-device auth state: creds and signal keys, never on local disk.
  yield* sql`
    CREATE TABLE wa_auth_state (
      number_id bigint NOT NULL REFERENCES numbers (id) ON DELETE CASCADE,
      kind text NOT NULL,
      key_id text NOT NULL,
      value jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (number_id, kind, key_id)
    )`

  // Who a number has talked to, and who wrote first.
  yield* sql`
    CREATE TABLE contacts (
      number_id bigint NOT NULL REFERENCES numbers (id),
      phone text NOT NULL,
      lid text,
      name text,
      wrote_first boolean NOT NULL,
      first_contact_at timestamptz NOT NULL,
      last_contact_at timestamptz NOT NULL,
      first_in_at timestamptz,
      first_out_at timestamptz,
      PRIMARY KEY (number_id, phone)
    )`
  yield* sql`CREATE INDEX contacts_lid ON contacts (number_id, lid) WHERE lid IS NOT NULL`

  yield* sql`
    CREATE TABLE messages (
      id bigserial PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      number_id bigint NOT NULL REFERENCES numbers (id),
      direction text NOT NULL CHECK (direction IN ('in', 'out')),
      source text NOT NULL,
      chat_id text NOT NULL,
      peer text NOT NULL,
      peer_lid text,
      name text,
      is_group boolean NOT NULL DEFAULT false,
      group_subject text,
      author text,
      wa_message_id text NOT NULL,
      type text NOT NULL,
      text text NOT NULL DEFAULT '',
      status text NOT NULL,
      error text,
      media jsonb,
      media_skipped boolean NOT NULL DEFAULT false,
      media_skip_reason text,
      media_pending boolean NOT NULL DEFAULT false,
      first_contact boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // GET /messages walks one of these backwards by id (keyset) whatever the filter combination.
  yield* sql`CREATE INDEX messages_account ON messages (account_id, id DESC)`
  yield* sql`CREATE INDEX messages_number ON messages (number_id, id DESC)`
  yield* sql`CREATE INDEX messages_account_chat ON messages (account_id, chat_id, id DESC)`
  yield* sql`CREATE INDEX messages_number_chat ON messages (number_id, chat_id, id DESC)`
  yield* sql`CREATE INDEX messages_account_direction ON messages (account_id, direction, id DESC)`
  yield* sql`CREATE INDEX messages_number_direction ON messages (number_id, direction, id DESC)`
  yield* sql`CREATE INDEX messages_account_created ON messages (account_id, created_at)`
  yield* sql`CREATE INDEX messages_number_created ON messages (number_id, created_at)`
  // Acks find their message by network id; replays after a reconnect are stored once.
  yield* sql`CREATE UNIQUE INDEX messages_wa_id ON messages (number_id, wa_message_id)`

  yield* sql`
    CREATE TABLE chats (
      number_id bigint NOT NULL REFERENCES numbers (id),
      chat_id text NOT NULL,
      account_id bigint NOT NULL REFERENCES accounts (id),
      peer text NOT NULL,
      peer_lid text,
      name text,
      is_group boolean NOT NULL DEFAULT false,
      group_subject text,
      last_message_id bigint,
      last_message_at timestamptz,
      message_count integer NOT NULL DEFAULT 0,
      incoming_count integer NOT NULL DEFAULT 0,
      outgoing_count integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (number_id, chat_id)
    )`
  yield* sql`CREATE INDEX chats_account_recent ON chats (account_id, last_message_at DESC NULLS LAST)`
  yield* sql`CREATE INDEX chats_number_recent ON chats (number_id, last_message_at DESC NULLS LAST)`

  yield* sql`
    CREATE TABLE media_files (
      id bigserial PRIMARY KEY,
      message_id bigint NOT NULL REFERENCES messages (id),
      account_id bigint NOT NULL REFERENCES accounts (id),
      number_id bigint NOT NULL REFERENCES numbers (id),
      kind text NOT NULL,
      mime_type text NOT NULL,
      filename text,
      size bigint NOT NULL,
      blob_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz,
      purge_after timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX media_files_message ON media_files (message_id)`
  yield* sql`CREATE INDEX media_files_account_live ON media_files (account_id, number_id, kind) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX media_files_purge ON media_files (purge_after) WHERE purge_after IS NOT NULL`

  // Per number and Almaty calendar day.
  yield* sql`
    CREATE TABLE daily_usage (
      number_id bigint NOT NULL REFERENCES numbers (id),
      day date NOT NULL,
      messages integer NOT NULL DEFAULT 0,
      new_contacts integer NOT NULL DEFAULT 0,
      checks integer NOT NULL DEFAULT 0,
      PRIMARY KEY (number_id, day)
    )`

  yield* sql`
    CREATE TABLE exports (
      id bigserial PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      number_id bigint REFERENCES numbers (id),
      key_number_id bigint REFERENCES numbers (id),
      chat text,
      since timestamptz,
      until timestamptz,
      include_media boolean NOT NULL DEFAULT true,
      status text NOT NULL DEFAULT 'queued',
      progress integer,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      expires_at timestamptz,
      size bigint,
      files integer,
      messages integer,
      missing_files integer,
      blob_key text,
      error text
    )`
  yield* sql`CREATE INDEX exports_account ON exports (account_id, id DESC)`

  yield* sql`
    CREATE TABLE webhook_endpoints (
      account_id bigint PRIMARY KEY REFERENCES accounts (id),
      url text NOT NULL,
      secret text NOT NULL,
      previous_secret text,
      previous_secret_until timestamptz,
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      disabled_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`

  // Events are written in the same transaction as the change that caused them.
  yield* sql`
    CREATE TABLE webhook_outbox (
      id bigserial PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      event text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      delivered_at timestamptz,
      failed_at timestamptz,
      last_status integer,
      last_error text
    )`
  yield* sql`CREATE INDEX webhook_outbox_pending ON webhook_outbox (account_id, id) WHERE delivered_at IS NULL AND failed_at IS NULL`
  yield* sql`CREATE INDEX webhook_outbox_account ON webhook_outbox (account_id, created_at)`

  yield* sql`
    CREATE TABLE webhook_deliveries (
      id bigserial PRIMARY KEY,
      outbox_id bigint NOT NULL REFERENCES webhook_outbox (id),
      account_id bigint NOT NULL REFERENCES accounts (id),
      attempt integer NOT NULL,
      url text NOT NULL,
      status integer,
      error text,
      latency_ms integer,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, id DESC)`

  // A retried request with the same Idempotency-Key gets the first answer.
  yield* sql`
    CREATE TABLE idempotency_keys (
      account_id bigint NOT NULL REFERENCES accounts (id),
      key text NOT NULL,
      request_hash text NOT NULL,
      message_id bigint REFERENCES messages (id),
      status integer,
      response jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, key)
    )`
  yield* sql`CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`

  // Balance = sum of rows. Top-ups are positive, charges negative; never edited in place.
  yield* sql`
    CREATE TABLE ledger (
      id bigserial PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      amount bigint NOT NULL,
      kind text NOT NULL,
      number_id bigint REFERENCES numbers (id),
      day date,
      note text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX ledger_account ON ledger (account_id, id)`
  // A daily charge is drawn at most once per account, kind, number and day.
  yield* sql`CREATE UNIQUE INDEX ledger_daily_once ON ledger (account_id, kind, coalesce(number_id, 0), day) WHERE day IS NOT NULL`
})
