// Step 2: the source by routing key, then HMAC-SHA256 over the exact body bytes against its
// secret(s) (two during a rotation). The relay never holds secrets; this is the only check.
import type { SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';
import { verifyHubSignature } from '../../../services/crypto/hmac.ts';
import type { OpenedSource } from '../../sources/store.ts';
import type { IncomingDelivery } from '../types.ts';

export const SIGNATURE_HEADER = 'x-hub-signature-256';

/** The `sha256=<hex>` value to check: the provider's reading of the delivery when it has one. */
export function signatureOf(delivery: IncomingDelivery, provider: SourceProviderExtensionPoint | undefined): string | undefined {
  if (provider) {
    try {
      const extracted = provider.extractHeaders(delivery.headers);
      if (extracted.ok) {
        const input = provider.signatureInput({ headers: extracted.headers, body: delivery.body });
        if (input.signature !== null) return `sha256=${input.signature.replace(/^sha256=/, '')}`;
      }
    } catch {
      // Fall back to the standard header: a provider bug must not open the door.
    }
  }
  return delivery.headers[SIGNATURE_HEADER];
}

export function verifyDeliverySignature(delivery: IncomingDelivery, source: OpenedSource, provider: SourceProviderExtensionPoint | undefined): boolean {
  return verifyHubSignature(signatureOf(delivery, provider), delivery.body, source.secrets);
}
