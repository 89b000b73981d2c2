package android.app;
/** Stand-in (stubs/README.md). */
public class Notification {}
