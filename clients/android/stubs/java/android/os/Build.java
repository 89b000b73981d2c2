package android.os;
/** Stand-in (stubs/README.md). */
public class Build {
    public static final String MODEL = null;
    public static class VERSION {
        public static final int SDK_INT = 0;
        public static final String RELEASE = null;
    }
    public static class VERSION_CODES {
        public static final int O = 26;
        public static final int P = 28;
        public static final int Q = 29;
        public static final int S = 31;
        public static final int TIRAMISU = 33;
    }
}
