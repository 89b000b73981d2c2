// The Android library module an app team would build (Android Gradle Plugin, the Android SDK, Maven Central and
// Google's Maven repository). NOT BUILT HERE: this machine and CI have none of them (see README.md); build.sh compiles
// and tests the same sources with Debian's kotlinc and type-checks the glue against stubs/. Versions are those the
// stubs were written from; bump them together.
plugins {
    id("com.android.library") version "8.5.2"
    id("org.jetbrains.kotlin.android") version "1.9.24"
}

android {
    namespace = "paperboy.client"
    compileSdk = 34

    defaultConfig {
        minSdk = 24
    }

    compileOptions {
        // java.time below API 26.
        isCoreLibraryDesugaringEnabled = true
        sourceCompatibility = JavaVersion.VERSION_1_8
        targetCompatibility = JavaVersion.VERSION_1_8
    }

    kotlinOptions {
        jvmTarget = "1.8"
    }

    sourceSets {
        getByName("main") {
            // The library (plain JVM: the JDK and the Kotlin standard library only) and the Android glue.
            java.srcDirs("src/main/kotlin", "glue")
            manifest.srcFile("glue/AndroidManifest.xml")
        }
        getByName("test") {
            java.srcDirs("src/test/kotlin")
        }
    }

    testOptions {
        unitTests.all {
            // The tests read the golden vectors shared with the server and the Swift client.
            it.systemProperty("paperboy.vectors", file("../vectors").absolutePath)
        }
    }
}

dependencies {
    coreLibraryDesugaring("com.android.tools:desugar_jdk_libs:2.0.4")
    implementation("androidx.core:core-ktx:1.12.0")
    implementation("androidx.work:work-runtime-ktx:2.9.0")
    implementation("androidx.lifecycle:lifecycle-process:2.7.0")
    implementation("org.jetbrains.kotlinx:kotlinx-coroutines-android:1.7.3")
    implementation("com.google.firebase:firebase-messaging:23.4.1")
    testImplementation("junit:junit:4.13.2")
}
