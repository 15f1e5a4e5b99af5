// Typed references to extension points: the host uses `members` for the sign-in `shape` phase,
// callers use the phantom type to get the right interface back from the registry.
import type { PluginKind } from '../../schemas/plugin.ts';

export type MemberType = 'function' | 'string' | 'object';

/** Members every created instance of a kind must have, by name and `typeof`. */
export type RequiredMembers<T> = { readonly [P in keyof T]?: MemberType };

export interface ExtensionPointRef<K extends PluginKind = PluginKind, T = unknown> {
  /** Registry id of the extension point (`storage`, `providers`, …). */
  readonly id: string;
  readonly kind: K;
  readonly members: RequiredMembers<T>;
  /** Phantom: never set at run time; carries the interface type. */
  readonly $type?: T;
}

/** Every plugin instance may release what it holds; the host calls this in reverse sign-in order. */
export interface PluginInstance {
  close?(): Promise<void> | void;
}

export function createExtensionPointRef<T>() {
  return <K extends PluginKind>(ref: { id: string; kind: K; members: RequiredMembers<T> }): ExtensionPointRef<K, T> =>
    Object.freeze({ id: ref.id, kind: ref.kind, members: Object.freeze({ ...ref.members }) });
}
