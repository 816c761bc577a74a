"""Seed 000's first DiffiMax prototype, and its comparison with the revised DiffiMax.

The seed gives the prototype in one paragraph: a randomly generated tree, hard-coded conditions
`drawThresh = 1.25` and `winThresh = 2`, opponent nodes considered only with at least 10 children,
the opponent's best and second-best replies compared, and the second-best reply *substituted* for
the best when the trap conditions hold. What it leaves open is settled here and in
`docs/prototype.md`:

- Trap condition at an opponent (MIN) node with at least `min_children` children, on the children's
  backed-up prototype values sorted for the responder (v1 <= v2 <= ...), from the setter's view:
  rule "band" (default): `|v1| <= drawThresh and v2 >= winThresh` (best play keeps the game inside
  the draw band, the natural second choice hands the setter a win); rule "ceiling":
  `v1 <= drawThresh and v2 >= winThresh` (also a trap when the setter is lost with best play).
  Both comparisons are inclusive, like the revised method's `T <= dip <= R`.
- Substitution: the node's backed-up value becomes v2, and it propagates: parents back up the
  substituted value like any other (MAX takes the max, MIN the min and applies its own test to the
  children's prototype values). So prototype values are never below minimax values.
- Setter (MAX) nodes never substitute; leaves are the generator's values.

The random trees are ordinary `search.tree` nested tuples (centipawn leaves), so the revised
DiffiMax runs on the very same trees through `TreeGame` and `DiffiMaxSearch`.

The package: `trees` (the settings, the random trees), `seed` (the prototype's search),
`comparison` (against the revised DiffiMax), `render` (JSON and text). Pure: no I/O.
"""

from search.prototype.comparison import (
    OVERLAP_COUNTS as OVERLAP_COUNTS,
)
from search.prototype.comparison import (
    Comparison as Comparison,
)
from search.prototype.comparison import (
    Overlap as Overlap,
)
from search.prototype.comparison import (
    Totals as Totals,
)
from search.prototype.comparison import (
    TreeComparison as TreeComparison,
)
from search.prototype.comparison import (
    compare as compare,
)
from search.prototype.comparison import (
    compare_tree as compare_tree,
)
from search.prototype.comparison import (
    revised_settings as revised_settings,
)
from search.prototype.render import (
    comparison_json as comparison_json,
)
from search.prototype.render import (
    comparison_text as comparison_text,
)
from search.prototype.render import (
    overlap_json as overlap_json,
)
from search.prototype.render import (
    prototype_trap_json as prototype_trap_json,
)
from search.prototype.render import (
    totals_json as totals_json,
)
from search.prototype.render import (
    tree_json as tree_json,
)
from search.prototype.seed import (
    PrototypeResult as PrototypeResult,
)
from search.prototype.seed import (
    PrototypeTrap as PrototypeTrap,
)
from search.prototype.seed import (
    prototype_search as prototype_search,
)
from search.prototype.seed import (
    trap_condition as trap_condition,
)
from search.prototype.trees import (
    DRAW_RULES as DRAW_RULES,
)
from search.prototype.trees import (
    MAX_LEAVES as MAX_LEAVES,
)
from search.prototype.trees import (
    VALUE_MODELS as VALUE_MODELS,
)
from search.prototype.trees import (
    DrawRule as DrawRule,
)
from search.prototype.trees import (
    InvariantError as InvariantError,
)
from search.prototype.trees import (
    Path as Path,
)
from search.prototype.trees import (
    PrototypeSettings as PrototypeSettings,
)
from search.prototype.trees import (
    RootKind as RootKind,
)
from search.prototype.trees import (
    ValueModel as ValueModel,
)
from search.prototype.trees import (
    children_at as children_at,
)
from search.prototype.trees import (
    node_at as node_at,
)
from search.prototype.trees import (
    random_tree as random_tree,
)
from search.prototype.trees import (
    random_trees as random_trees,
)
