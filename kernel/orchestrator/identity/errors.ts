// Identity errors with stable codes.
import { SvcError } from '../../../core/errors.ts';

/** A sealed signing key opens with no configured master key: boot must stop. */
export class MasterKeyMismatchError extends SvcError {}

/** Minting could not use the key (unsealable, signer failing): mint defers at once. */
export class KeyUnavailableError extends SvcError {}
