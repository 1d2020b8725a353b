#pragma once
// What a scenario file may cost to load. A hand-written scenario is a few
// hundred lines and a few hundred YAML nodes; each cap sits far above that and
// far below what would take the loader more than a second or more than a few
// tens of MiB. Anything past a cap is refused with a located diagnostic, never
// truncated: a silently shortened scenario would run something else.
#include <cstddef>

namespace harness {

// Bytes of one scenario file (the file itself or one it `extends`). The largest
// scenario in scenarios/ is under 10 KiB.
inline constexpr size_t kMaxScenarioBytes = 1 << 20;

// Characters of an `extends` value. PATH_MAX is 4096; a path a person wrote is
// far shorter, and a longer one makes the filesystem calls fail rather than answer.
inline constexpr size_t kMaxExtendsPathChars = 1024;

// Files in one `extends` chain (the file itself included). Each level is read,
// parsed and merged; a deeper chain is not something anyone reads.
inline constexpr size_t kMaxExtendsDepth = 16;

// YAML nodes of one file's tree, aliases counted as the copies they become.
// Aliases are the "billion laughs" lever: ten nested aliases of ten items each
// name 10^10 nodes in a few hundred bytes, so the budget counts every copy.
inline constexpr size_t kMaxYamlNodes = 100000;

// Scalar bytes of one file's tree, aliases counted as copies: one 1 MiB scalar
// named by a thousand aliases would otherwise be a GiB.
inline constexpr size_t kMaxYamlScalarBytes = 16u << 20;

// Nesting of mappings and lists. The scenario format uses five levels
// (matrix.include[i].expect.outcome); every pass over the tree recurses.
inline constexpr int kMaxYamlDepth = 64;

// Values of one matrix axis, and combinations the axes may multiply to before
// exclude is applied: past these no exclude list brings a matrix under the cell
// limit that anyone would write, and expanding them would cost seconds and GiBs.
inline constexpr size_t kMaxAxisValues = 4096;
inline constexpr size_t kMaxMatrixProduct = 4096;

// Entries of matrix.exclude and matrix.include: every entry is matched against
// every cell, and each include entry adds or changes cells, so more entries than
// this many cells cannot be meant.
inline constexpr size_t kMaxMatrixEntries = 1024;

// Ranks of a world_size cell: each is a process on this machine with its own
// model copy, and the ranks' event streams are read side by side.
inline constexpr long long kMaxWorldSize = 64;

// Characters of a scenario's name: it becomes a directory name and a report
// title, and NAME_MAX is 255.
inline constexpr size_t kMaxNameChars = 128;

// Diagnostics kept in full: a thousand copies of one mistake help nobody, and
// every one would hold its own line of the file.
inline constexpr size_t kMaxDiagnostics = 100;

// Characters of a source line shown under a diagnostic (a window around the
// column), of a key path and of a value quoted in a message.
inline constexpr size_t kMaxShownLineChars = 160;
inline constexpr size_t kMaxShownKeyPathChars = 200;
inline constexpr size_t kMaxQuotedChars = 80;

}  // namespace harness
