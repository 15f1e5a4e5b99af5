// What a composition root (bin/roots, the dev stack) gets from the kernel when it picks the
// plugins that serve, and what it hands back: built-ins, config slices, and the selection.
import type { SvcConfig } from '../../schemas/config.ts';
import type { SvcPlugin } from './define-plugin.ts';

/** What the composition root knows when it chooses plugins and writes their config slices. */
export interface PluginEnvironment {
  config: SvcConfig;
  /** `{base_url}`. */
  publicUrl: string;
  dataDir: string;
  /** A secret derived from the master key for one purpose (`storage-url`, …). */
  derivedSecret(purpose: string): string;
}

export interface PluginSelection {
  builtIns: SvcPlugin[];
  /** Config slices keyed `<kind>:<id>`. */
  config: Record<string, unknown>;
  /** Which plugin serves each single-plugin kind (`storage`, `custody`). */
  selection: Record<string, string>;
}

