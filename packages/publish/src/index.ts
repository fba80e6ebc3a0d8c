export { type Recognition, recognizeArtifact } from "./artifact-names.js";
export { escapeControlCharacters } from "./control-characters.js";
export {
  CommandError,
  type CommandResult,
  integerOption,
  type Options,
  publishOptions,
  requiredOption,
  stringOption,
  UsageError,
  usageErrorOf,
} from "./options.js";
export {
  digestFile,
  type Placement,
  type Plan,
  type PlannedArtifact,
  planArtifacts,
  publishCommand,
  type PublishBody,
  type ReleaseEntry,
} from "./publish.js";
export { type Arch, arches, type Platform, platforms } from "./targets.js";
