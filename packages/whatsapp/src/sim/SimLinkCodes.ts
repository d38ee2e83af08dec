/**
 * The QR payloads and pairing codes the simulator shows while linking. Deterministic (derived
 * from the phone and the attempt), so tests and demos can predict them.
 *
 * @since 1.0.0
 */

/**
 * The QR payload of a number's `ref`-th QR (1 for the first one, then one more per refresh).
 *
 * @since 1.0.0
 */
export const qrPayload = (phone: string, ref: number): string => `sim-qr:${phone}:${ref}`

// WhatsApp's pairing-code alphabet leaves out 0, O, I and U, which people confuse.
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTVWXYZ"

/**
 * The 8-character pairing code of a number's `attempt`-th link attempt: upper-case letters and
 * digits, without a dash (people may type it as "ABCD-EFGH"; {@link normalizePairingCode}
 * accepts both).
 *
 * @since 1.0.0
 */
export const pairingCode = (phone: string, attempt: number): string => {
  // FNV-1a over the seed, then xorshift32 for the characters: stable across runs and platforms.
  let state = 0x811c9dc5
  for (const char of `${phone}:${attempt}`) {
    state = Math.imul(state ^ char.charCodeAt(0), 0x01000193) >>> 0
  }
  let code = ""
  for (let i = 0; i < 8; i++) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    code += ALPHABET[state % ALPHABET.length]
  }
  return code
}

/**
 * A pairing code as typed by a person, in the form {@link pairingCode} shows: dashes and spaces
 * dropped, upper case.
 *
 * @since 1.0.0
 */
export const normalizePairingCode = (input: string): string => input.replace(/[\s-]/g, "").toUpperCase()
