/**
 * Checking whether a phone exists on the network.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Authentication } from "../Auth.js"
import { ContactCheck, ContactCheckRequest } from "../ContactCheck.js"
import { BodyErrors, NumberCallErrors, NumberChoiceErrors } from "./Errors.js"
import { withCheckHeaders } from "./OpenApiDoc.js"

/** @since 1.0.0 */
export class ContactsApi extends HttpApiGroup.make("contacts")
  .add(
    HttpApiEndpoint.post("check", "/contacts/check")
      .setPayload(ContactCheckRequest)
      .addSuccess(ContactCheck)
      .addError(BodyErrors)
      .addError(NumberChoiceErrors)
      .addError(NumberCallErrors)
      .annotate(OpenApi.Summary, "Check whether a phone exists on the network (200 a day per number, 1 a second)")
      .annotateContext(withCheckHeaders)
  )
  .middleware(Authentication)
{}
