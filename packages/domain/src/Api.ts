/**
 * The HTTP contract of wagate: every endpoint of the interface specification, with its
 * parameters, success and error responses. The server and the typed client are both derived
 * from it. Each group lives in its own file under `api/`.
 *
 * @since 1.0.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import { AccountApi } from "./api/AccountApi.js"
import { ChatsApi } from "./api/ChatsApi.js"
import { ContactsApi } from "./api/ContactsApi.js"
import { ExportsApi } from "./api/ExportsApi.js"
import { HistoryApi } from "./api/HistoryApi.js"
import { MediaApi } from "./api/MediaApi.js"
import { MessagesApi } from "./api/MessagesApi.js"
import { NumbersApi } from "./api/NumbersApi.js"
import { documentTransform } from "./api/OpenApiDoc.js"
import { PublicApi } from "./api/PublicApi.js"
import { StorageApi } from "./api/StorageApi.js"
import { LimitsApi } from "./api/LimitsApi.js"
import { WebhooksApi } from "./api/WebhooksApi.js"

export {
  AccountApi,
  ChatsApi,
  ContactsApi,
  ExportsApi,
  HistoryApi,
  LimitsApi,
  MediaApi,
  MessagesApi,
  NumbersApi,
  PublicApi,
  StorageApi,
  WebhooksApi
}

/** @since 1.0.0 */
export const API_VERSION = "1.0.0"

/**
 * The versioned REST API under `/api/v1`, and the public status beside it.
 *
 * @since 1.0.0
 */
export class WagateApi extends HttpApi.make("wagate")
  .add(MessagesApi)
  .add(ChatsApi)
  .add(HistoryApi)
  .add(MediaApi)
  .add(StorageApi)
  .add(ExportsApi)
  .add(NumbersApi)
  .add(AccountApi)
  .add(LimitsApi)
  .add(ContactsApi)
  .add(WebhooksApi)
  .prefix("/api/v1")
  .add(PublicApi)
  .annotateContext(OpenApi.annotations({
    title: "wagate",
    version: API_VERSION,
    description:
      "Self-hostable WhatsApp linked-device gateway. Every error body is `{error, code}`; every endpoint can answer 401 (unauthorized, invalid_key) and 429 (key_rate_limited, rate_limited) with Retry-After.",
    transform: documentTransform
  }))
{}
