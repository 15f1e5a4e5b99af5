// Identity errors with stable codes.
import { SvcError } from '../../../core/errors.ts';

/** A sealed value (a signing key among them) opens with no configured master key: boot must stop. */
export { MasterKeyMismatchError } from '../../services/crypto/sealed-stores.ts';

/** Minting could not use the key (unsealable, signer failing): mint defers at once. */
export class KeyUnavailableError extends SvcError {}
