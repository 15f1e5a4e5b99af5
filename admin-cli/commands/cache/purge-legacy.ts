// `svc-admin cache purge-legacy [--dry-run]`: deletes objects of the pre-0.6 cache layouts,
// which 0.9 no longer reads (what counts as legacy: isLegacyCacheKey, docs/caches.md).
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { formatBytes, purgeLegacyObjects } from '../../../kernel/orchestrator/caches/index.ts';
import { adminConfig, withStorage } from './shared.ts';

export default class CachePurgeLegacy extends SvcCommand {
  static override description = 'Delete cache objects stored under pre-0.6 layouts (anything outside source/v2/, deps/<platform>-<arch>/, cache/ that looks like an old cache)';
  static override flags = {
    'dry-run': Flags.boolean({ description: 'only list what would be deleted' }),
  };

  async run(): Promise<{ dryRun: boolean; deleted: number; objects: Array<{ key: string; size: number }> }> {
    const { flags } = await this.parse(CachePurgeLegacy);
    const config = await adminConfig();
    const dryRun = flags['dry-run'];
    const result = await withStorage(config, (storage) => purgeLegacyObjects(storage, { dryRun }));
    if (!this.jsonEnabled()) {
      for (const o of result.objects) this.log(`${dryRun ? 'would delete' : 'deleted'}  ${o.key}`);
      const bytes = formatBytes(result.objects.reduce((sum, o) => sum + o.size, 0));
      this.log(dryRun ? `${result.objects.length} legacy cache objects (${bytes}) would be deleted.` : `Deleted ${result.deleted} legacy cache objects (${bytes}).`);
    }
    return { dryRun, deleted: result.deleted, objects: result.objects };
  }
}
