package androidx.work;
/** Stand-in (stubs/README.md). */
public interface Operation {}
