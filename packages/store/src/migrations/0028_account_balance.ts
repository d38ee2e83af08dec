import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * An account's balance as a running total: `account_balances` holds the sum of the account's
 * ledger, moved by statement-level triggers on `ledger` in the same transaction as every row
 * written, changed or removed there, whichever code writes it (as `media_usage` is for files).
 * Before, every balance read (each settlement, payment, refund, balance and number list) summed
 * the account's whole ledger, which gains a row a number a day: 340 ms at 500,000 rows, a year and
 * a half of a 1,000-number account (docs/performance.md, "The balance of an account with a long
 * ledger"). An account without a row has a balance of 0.
 *
 * The triggers come before the sum that fills the table: creating them waits for the ledger
 * writes under way and holds new ones (reads go on) until this migration commits, so the sum and
 * the triggers count every row once, also while older processes of a rolling upgrade write.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE account_balances (
      account_id bigint PRIMARY KEY REFERENCES accounts (id),
      balance bigint NOT NULL
    )`
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_balance_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO account_balances AS b (account_id, balance)
        SELECT account_id, sum(amount) FROM new_rows GROUP BY account_id
        ON CONFLICT (account_id) DO UPDATE SET balance = b.balance + EXCLUDED.balance;
      ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO account_balances AS b (account_id, balance)
        SELECT account_id, sum(amount) FROM (
          SELECT account_id, amount FROM new_rows UNION ALL SELECT account_id, -amount FROM old_rows
        ) moved GROUP BY account_id
        ON CONFLICT (account_id) DO UPDATE SET balance = b.balance + EXCLUDED.balance;
      ELSE
        UPDATE account_balances b SET balance = b.balance - d.amount
        FROM (SELECT account_id, sum(amount) AS amount FROM old_rows GROUP BY account_id) d
        WHERE b.account_id = d.account_id;
      END IF;
      RETURN NULL;
    END $$`)
  yield* sql.unsafe(`
    CREATE TRIGGER ledger_balance_insert AFTER INSERT ON ledger
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ledger_balance_apply()`)
  yield* sql.unsafe(`
    CREATE TRIGGER ledger_balance_update AFTER UPDATE ON ledger
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ledger_balance_apply()`)
  yield* sql.unsafe(`
    CREATE TRIGGER ledger_balance_delete AFTER DELETE ON ledger
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ledger_balance_apply()`)
  yield* sql`
    INSERT INTO account_balances (account_id, balance)
    SELECT account_id, sum(amount) FROM ledger GROUP BY account_id`
})
