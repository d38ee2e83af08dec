import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * The customer cabinet. A cabinet user is an account's owner: one per account, signed in with
 * the account's email and an Argon2id password hash (null for an account the operator created
 * until its owner sets a password through a reset link). Sessions and one-time links (email
 * confirmation, password reset) are stored only as SHA-256 hashes of their secrets. API keys
 * remember when they were last used.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE cabinet_users (
      account_id bigint PRIMARY KEY REFERENCES accounts (id),
      password_hash text,
      verified_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      password_changed_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE cabinet_sessions (
      id_hash bytea PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      csrf text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX cabinet_sessions_account ON cabinet_sessions (account_id)`
  yield* sql`
    CREATE TABLE cabinet_tokens (
      hash bytea PRIMARY KEY,
      account_id bigint NOT NULL REFERENCES accounts (id),
      kind text NOT NULL CHECK (kind IN ('verify', 'reset')),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`CREATE INDEX cabinet_tokens_account ON cabinet_tokens (account_id)`
  yield* sql`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz`
})
