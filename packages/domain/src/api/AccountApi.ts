/**
 * The account: summary, balance and its data.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Account, Balance, Summary } from "../Account.js"
import { Authentication } from "../Auth.js"
import { AccountKeyOnly } from "./Errors.js"

/** @since 1.0.0 */
export class AccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("status", "/status")
      .addSuccess(Summary)
      .annotate(OpenApi.Summary, "Numbers and balance in one answer (a number key: its number, no balance)")
  )
  .add(
    HttpApiEndpoint.get("balance", "/balance")
      .addSuccess(Balance)
      .addError(AccountKeyOnly)
      .annotate(OpenApi.Summary, "Balance and daily drawdown (account key only)")
  )
  .add(
    HttpApiEndpoint.get("me", "/me")
      .addSuccess(Account)
      .addError(AccountKeyOnly)
      .annotate(OpenApi.Summary, "Account data (account key only)")
  )
  .middleware(Authentication)
{}
