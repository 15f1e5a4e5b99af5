// The App's own log of the webhooks GitHub sent it (`GET /app/hook/deliveries`, newest first,
// cursor-paged) and redelivery of one attempt (`POST /app/hook/deliveries/{id}/attempts`), both
// as the App (JWT). GitHub keeps about three days of this log and never resends by itself: after
// the relay or the orchestrator was away, this is how missed pushes come back.
import type { ForgeDeliveryAttempt, ProviderSource } from '../../../core/extension-points/provider.ts';
import { InputError } from '../../../core/errors.ts';
import { githubError, type GithubAppClient } from './app-client.ts';
import { githubSourceOf } from './settings.ts';

/** Pages read per listing at most (100 attempts each): a bound on one pass, not on the log. */
export const MAX_DELIVERY_PAGES = 20;

interface HookDeliveryItem {
  id?: unknown;
  guid?: unknown;
  delivered_at?: unknown;
  status_code?: unknown;
  event?: unknown;
  redelivery?: unknown;
}

function attemptOf(item: HookDeliveryItem): ForgeDeliveryAttempt | null {
  if ((typeof item.id !== 'number' && typeof item.id !== 'string') || typeof item.guid !== 'string' || typeof item.delivered_at !== 'string') return null;
  const deliveredAt = new Date(item.delivered_at);
  if (Number.isNaN(deliveredAt.getTime())) return null;
  return {
    id: String(item.id),
    deliveryId: item.guid,
    deliveredAt,
    statusCode: typeof item.status_code === 'number' ? item.status_code : 0,
    event: typeof item.event === 'string' ? item.event : '',
    redelivery: item.redelivery === true,
  };
}

/** The `cursor` of a Link header's rel="next", or null. */
export function nextCursor(link: string | undefined): string | null {
  if (link === undefined) return null;
  for (const part of link.split(',')) {
    const match = /<([^>]+)>\s*;\s*rel="next"/.exec(part);
    if (match) return new URL(match[1]!).searchParams.get('cursor');
  }
  return null;
}

export class GithubHookDeliveries {
  readonly #client: GithubAppClient;

  constructor(client: GithubAppClient) {
    this.#client = client;
  }

  async list(source: ProviderSource, since: Date): Promise<ForgeDeliveryAttempt[]> {
    const octokit = this.#client.appOctokit(githubSourceOf(source));
    const attempts: ForgeDeliveryAttempt[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < MAX_DELIVERY_PAGES; page++) {
      let response;
      try {
        response = await octokit.request('GET /app/hook/deliveries', { per_page: 100, ...(cursor === null ? {} : { cursor }) });
      } catch (error) {
        throw githubError(error, 'the App\'s webhook deliveries');
      }
      const items = Array.isArray(response.data) ? (response.data as HookDeliveryItem[]) : [];
      let older = false;
      for (const item of items) {
        const attempt = attemptOf(item);
        if (attempt === null) continue;
        if (attempt.deliveredAt < since) older = true;
        else attempts.push(attempt);
      }
      cursor = nextCursor(response.headers.link);
      // Newest first: once a page reaches past `since`, the rest is older still.
      if (older || cursor === null || items.length === 0) break;
    }
    return attempts;
  }

  async redeliver(source: ProviderSource, id: string): Promise<void> {
    if (!/^[0-9]{1,20}$/.test(id)) throw new InputError('SVC_ERR_GITHUB_HOOK_DELIVERY_ID', `hook delivery id "${id.slice(0, 40)}" is not a GitHub delivery id`);
    const octokit = this.#client.appOctokit(githubSourceOf(source));
    try {
      await octokit.request('POST /app/hook/deliveries/{delivery_id}/attempts', { delivery_id: Number(id) });
    } catch (error) {
      throw githubError(error, `redelivery of hook delivery ${id}`);
    }
  }
}
