/**
 * The trust index of a number: 0-100 over the last 14 days, from six inputs. The formula and the
 * reasons for its weights are in docs/trust-index.md.
 */

export const WINDOW_DAYS = 14

/** Below this many messages in the window the index says too little: standard limits apply. */
export const ENOUGH_DATA_MESSAGES = 20

/** What the last 14 days say about a number. */
export interface TrustInputs {
  /** People the number started talking with in the window (first contact in the window). */
  readonly dialogs: number
  /** Of those, the ones who wrote first (customers starting the dialog). */
  readonly dialogsStartedByCustomers: number
  /** First messages the number sent to new people (cold), excluding the last 24 hours. */
  readonly coldFirstMessages: number
  /** Of those cold first messages, how many people answered. */
  readonly coldAnswered: number
  /** Cold first messages per day over the window. */
  readonly coldPerDay: number
  readonly incoming: number
  readonly outgoing: number
  /** Outgoing messages that failed to be delivered. */
  readonly failed: number
  /** Days since the number was first connected to the service. */
  readonly daysConnected: number
}

export interface TrustComponents {
  readonly customersStart: number
  readonly answers: number
  readonly balance: number
  readonly coldVolume: number
  readonly deliverability: number
  readonly tenure: number
}

export const WEIGHTS: TrustComponents = {
  customersStart: 0.2,
  answers: 0.2,
  balance: 0.15,
  coldVolume: 0.15,
  deliverability: 0.15,
  tenure: 0.15
}

const clamp = (x: number) => Math.max(0, Math.min(1, x))

/** Each input as a score 0..1 (1 is trustworthy). Inputs without data score neutrally. */
export const components = (i: TrustInputs): TrustComponents => ({
  customersStart: i.dialogs === 0 ? 0.5 : clamp(i.dialogsStartedByCustomers / i.dialogs),
  answers: i.coldFirstMessages === 0 ? 1 : clamp(i.coldAnswered / i.coldFirstMessages),
  balance: i.outgoing === 0 ? 1 : clamp(i.incoming / i.outgoing),
  coldVolume: clamp(1 - i.coldPerDay / 150),
  deliverability: i.outgoing === 0 ? 1 : clamp(1 - 5 * (i.failed / i.outgoing)),
  tenure: clamp(i.daysConnected / 30)
})

/** The index, 0-100. */
export const trustIndex = (inputs: TrustInputs): number => {
  const c = components(inputs)
  const score = (Object.keys(WEIGHTS) as Array<keyof TrustComponents>).reduce((sum, k) => sum + WEIGHTS[k] * c[k], 0)
  return Math.round(100 * score)
}

/** Whether the window holds enough messages for the index to decide the tier. */
export const enoughData = (inputs: TrustInputs, minimum = ENOUGH_DATA_MESSAGES): boolean => inputs.incoming + inputs.outgoing >= minimum
