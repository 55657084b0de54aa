import { type Hex, keccak256, stringToHex } from 'viem';

/**
 * The MPP attribution memo of a TIP-20 `transferWithMemo` (API-CONTRACT 10.3 point 7), 32 bytes:
 * 0–3 `keccak256("mpp")[0..3]` (the tag), 4 the version `0x01`, 5–14 `keccak256(realm)[0..9]` (the server's
 * fingerprint), 15–24 `keccak256(client id)[0..9]` or zeros, 25–31 a nonce. mppx 0.11 writes
 * `keccak256(challenge id)[0..6]` as the nonce and its server refuses any other; pympp 0.4.2, which the
 * deployed SyftHub wallet signs with, writes random bytes. knode accepts both: it checks the tag, the
 * version and that the memo names this realm, and leaves the client id and the nonce alone (the
 * challenge is bound by its HMAC and the single-use store instead).
 *
 * mppx has the same helpers (`tempo/Attribution.js`) but does not export them; these are byte for byte
 * the same layout.
 */

/** The first 4 bytes of keccak256("mpp"): `0xef1ed712`. */
const MPP_MEMO_TAG = keccak256(stringToHex('mpp')).slice(0, 10) as Hex;
const MPP_MEMO_VERSION = 0x01;

/** The 10-byte fingerprint of a server (its realm) or client id, as hex without `0x`. */
function fingerprint(value: string): string {
  return keccak256(stringToHex(value)).slice(2, 22);
}

/** Why a memo does not attribute a payment to this realm, or undefined when it does. */
export function memoProblem(memo: Hex | undefined, realm: string): string | undefined {
  if (memo?.length !== 66) return 'the transfer carries no MPP memo';
  const lower = memo.toLowerCase();
  if (lower.slice(0, 10) !== MPP_MEMO_TAG.toLowerCase()) return 'the transfer memo is not an MPP memo (wrong tag)';
  if (Number.parseInt(lower.slice(10, 12), 16) !== MPP_MEMO_VERSION) return 'the transfer memo has an unknown MPP memo version';
  if (lower.slice(12, 32) !== fingerprint(realm)) return 'the transfer memo names another server (wrong fingerprint)';
  return undefined;
}
