#!/usr/bin/env bash
# Lists the public top-level types of each module that has a DocC catalog but that no page of the
# catalog lists under a "## Topics" heading as a ``symbol`` link, and fails if there is one. Reads the API record in api/ (scripts/api.sh), so it needs no build.
#
# Usage: scripts/catalog-topics.sh
set -euo pipefail
cd "$(dirname "$0")/.."

missing=0
for record in api/*.txt; do
    module=$(basename "$record" .txt)
    catalog="Sources/$module/$module.docc"
    [ -d "$catalog" ] || continue
    # What the catalog's pages list under their "## Topics" headings.
    topics=$(find "$catalog" -name '*.md' -exec awk '/^## Topics/ { on = 1; next } /^## / { on = 0 } on' {} +)
    # A top-level symbol's path has no dot; keep the types (not functions or operators).
    while read -r name; do
        if ! grep -qE -- "\`\`$name(\`\`|[/<(])" <<< "$topics"; then
            echo "$module: $name is in no topic of $catalog"
            missing=$((missing + 1))
        fi
    done < <(awk -F' \\| ' '$1 !~ /\./ && $2 ~ /(^| )(struct|class|enum|protocol|actor|typealias) / { print $1 }' "$record" | sort -u)
done
if [ "$missing" -ne 0 ]; then
    echo "$missing public types are in no catalog's topics: add each to its module's catalog." >&2
    exit 1
fi
echo "Every public type is in its catalog's topics."
