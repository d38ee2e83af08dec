/**
 * The WhatsApp network port and its simulator.
 *
 * @since 1.0.0
 */
export * as SimAgenda from "./sim/SimAgenda.js"
export * as SimApi from "./sim/SimApi.js"
export * as SimConfig from "./sim/SimConfig.js"
export * as SimDelivery from "./sim/SimDelivery.js"
export * as SimDevice from "./sim/SimDevice.js"
export * as SimErrors from "./sim/SimErrors.js"
export * as SimInbound from "./sim/SimInbound.js"
export * as SimLinkCodes from "./sim/SimLinkCodes.js"
export * as SimLinking from "./sim/SimLinking.js"
export * as SimMailbox from "./sim/SimMailbox.js"
export * as SimModel from "./sim/SimModel.js"
export * as SimNetwork from "./sim/SimNetwork.js"
export * as SimSentMessage from "./sim/SimSentMessage.js"
export * as SimSession from "./sim/SimSession.js"
export * as SimulatorDriver from "./sim/SimulatorDriver.js"
export * as WhatsAppDriver from "./WhatsAppDriver.js"
