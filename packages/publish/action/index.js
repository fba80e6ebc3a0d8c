// Generated from packages/publish/src by `npm run build:action`: edit the source, then run it.
export { recognizeArtifact } from "./artifact-names.js";
export { escapeControlCharacters } from "./control-characters.js";
export { CommandError, integerOption, publishOptions, requiredOption, stringOption, UsageError, usageErrorOf, } from "./options.js";
export { digestFile, planArtifacts, publishCommand, } from "./publish.js";
export { arches, platforms } from "./targets.js";
