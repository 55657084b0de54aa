/**
 * Argon2id, the memory-hard algorithm OWASP recommends (19 MiB, 2 passes), from Bun's built-in
 * implementation, so the compiled binary needs no native addon for it.
 */

/** Argon2id's memory (KiB) and passes. */
export interface PasswordHashCost {
  memoryCost: number;
  timeCost: number;
}

/**
 * OWASP's minimum, and the only cost knode itself ever uses: nothing in the configuration lowers it.
 * Only the tests pass a cheaper one (ServiceOptions.passwordHashCost), since every test user costs a hash
 * and a check, about 40 ms of CPU each at this cost.
 */
export const PASSWORD_HASH_COST: PasswordHashCost = { memoryCost: 19456, timeCost: 2 };

export function hashPassword(password: string, cost: PasswordHashCost = PASSWORD_HASH_COST): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id', ...cost });
}

/** The cost comes from the hash itself, so a check costs what the hash it checks against did. */
export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return Bun.password.verify(password, hash);
}

/** One throwaway hash per cost in use, made on the first login of an unknown e-mail. */
const dummyHashes = new Map<string, Promise<string>>();

/** Spends the time a real verification would, so an unknown e-mail cannot be told apart by timing. */
export async function verifyAgainstNothing(password: string, cost: PasswordHashCost = PASSWORD_HASH_COST): Promise<false> {
  const key = `${cost.memoryCost}/${cost.timeCost}`;
  let dummyHash = dummyHashes.get(key);
  if (!dummyHash) {
    dummyHash = hashPassword('knode-timing-equaliser', cost);
    dummyHashes.set(key, dummyHash);
  }
  await Bun.password.verify(password, await dummyHash);
  return false;
}
