package android.net;
/** Stand-in (stubs/README.md). */
public class Network {}
