#!/usr/bin/env bash
# Builds and tests the Android client without Gradle or the Android SDK (neither is on this machine or CI's; see
# README.md): Debian's kotlinc compiles the library (src/main, JDK only), its tests (src/test, JUnit 4) and the
# Android glue (glue/) against stand-ins for the Android, AndroidX and Firebase APIs it uses (stubs/: signatures as
# documented, no behaviour). Then JUnit runs the tests, driven by the golden vectors (clients/vectors). Exits non-zero
# on any compile error, warning (-Werror) or failing test.
#
#   clients/android/build.sh            everything (about a minute on two busy cores)
#   clients/android/build.sh --no-glue  the library and its tests only
#   clients/android/build.sh --compile-only, then --run-only: the two halves (CI compiles as idle work beside its
#                                       timing-sensitive tests and runs the tests, which time deadlines, afterwards)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
glue=1
compile=1
run=1
case "${1:-}" in
    --no-glue) glue=0 ;;
    --compile-only) run=0 ;;
    --run-only) compile=0 ;;
    "") ;;
    *) echo "usage: $0 [--no-glue | --compile-only | --run-only]" >&2; exit 2 ;;
esac

java_jars=/usr/share/java
junit="$java_jars/junit4.jar:$java_jars/hamcrest-core.jar"
stdlib="$java_jars/kotlin-stdlib.jar"
for jar in "$java_jars/junit4.jar" "$java_jars/hamcrest-core.jar" "$stdlib"; do
    [ -f "$jar" ] || { echo "build.sh: $jar is missing: apt-get install -y kotlin junit4" >&2; exit 1; }
done
command -v kotlinc >/dev/null || { echo "build.sh: kotlinc is missing: apt-get install -y kotlin" >&2; exit 1; }

# Debian's kotlinc 1.3.31 on JDK 17: the C1 compiler only and the serial collector make this short-lived compiler
# about twice as fast on a loaded machine; its launcher's -noverify warning (JDK 13+) is filtered out below.
export JAVA_OPTS="${JAVA_OPTS:--Xmx768M -Xms64M -XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
kotlinc_() {
    local status=0 log
    log=$(mktemp)
    nice -n 19 kotlinc -jvm-target 1.8 -Werror "$@" > "$log" 2>&1 || status=$?
    grep -v 'Options -Xverify:none and -noverify were deprecated' "$log" || true
    rm -f "$log"
    return "$status"
}

build="$here/build"
started=$(date +%s)
if [ "$compile" = 1 ]; then
rm -rf "$build"
mkdir -p "$build/main" "$build/test" "$build/stubs" "$build/glue"

echo "android: compiling the library (src/main: the JDK and the Kotlin standard library only)"
kotlinc_ -d "$build/main" src/main/kotlin

# The tests and the glue need only the library: compiled side by side (two cores), each reported when both end.
echo "android: compiling the tests (src/test)$([ "$glue" = 1 ] && echo ', and type-checking the glue (glue/) against the stand-ins (stubs/)')"
test_log=$(mktemp)
glue_log=$(mktemp)
trap 'rm -f "$test_log" "$glue_log"' EXIT
kotlinc_ -cp "$build/main:$junit" -d "$build/test" src/test/kotlin > "$test_log" 2>&1 &
test_pid=$!
glue_status=0
if [ "$glue" = 1 ]; then
    # The glue is Kotlin; the platform it calls is Java (stubs/java, checked by javac) except WorkManager's
    # CoroutineWorker and kotlinx.coroutines, whose suspend functions only Kotlin can declare (stubs/kotlin).
    {
        nice -n 19 javac -nowarn -Xlint:none -d "$build/stubs" $(find stubs/java -name '*.java' | sort) &&
            kotlinc_ -cp "$build/main:$build/stubs" -d "$build/glue" stubs/kotlin glue
    } > "$glue_log" 2>&1 || glue_status=$?
fi
test_status=0
wait "$test_pid" || test_status=$?
cat "$test_log" "$glue_log"
[ "$test_status" = 0 ] || { echo "android: the tests do not compile" >&2; exit 1; }
[ "$glue_status" = 0 ] || { echo "android: the glue does not type-check against stubs/" >&2; exit 1; }
fi
[ "$run" = 1 ] || { echo "android: compiled in $(( $(date +%s) - started )) s"; exit 0; }
[ -d "$build/test" ] || { echo "android: nothing compiled: run $0 --compile-only first" >&2; exit 1; }

echo "android: running the tests"
tests=$(cd src/test/kotlin && grep -l '@Test' $(find . -name '*Tests.kt') | sed 's|^\./||; s|\.kt$||; s|/|.|g' | sort)
nice -n 19 java -Dpaperboy.vectors="$here/../vectors" -cp "$build/main:$build/test:$stdlib:$junit" org.junit.runner.JUnitCore $tests
echo "android: built and tested in $(( $(date +%s) - started )) s"
